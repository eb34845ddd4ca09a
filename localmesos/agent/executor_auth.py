"""Executor authentication: each executor's token, and the checks of a call's token.

Mesos' agent with ``--authenticate_http_executors`` (apache/mesos ``src/slave/slave.cpp``
``generateSecret``, ``executorEnvironment``; ``src/slave/http.cpp`` ``Http::executor``,
``verifyExecutorClaims``; libprocess ``jwt_authenticator.cpp``):

* every executor it launches gets ``MESOS_EXECUTOR_AUTHENTICATION_TOKEN``, a JWT (HS256, the
  agent's secret) whose claims are ``fid``, ``eid`` and ``cid``: its framework, executor and
  container (:func:`token_for`);
* a call to ``/api/v1/executor`` without a valid ``Authorization: Bearer`` token is 401 with
  ``WWW-Authenticate: Bearer realm="mesos-agent-executor"`` (and libprocess' ``error`` and
  ``error_description`` when a token was sent but is not valid) (:func:`authenticate`);
* an authenticated call whose claims do not name the call's framework, executor and the
  executor's running container is 403 with Mesos' message (:func:`claims_error`): one
  executor's token does not let it speak for another.
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Sequence
import json
import secrets
from typing import Any

from disauto.localmesos.protocol import jwt


#: Mesos' ``EXECUTOR_HTTP_AUTHENTICATION_REALM`` (src/slave/constants.hpp).
EXECUTOR_REALM = "mesos-agent-executor"
#: The variable an executor finds its token in.
TOKEN_VARIABLE = "MESOS_EXECUTOR_AUTHENTICATION_TOKEN"


def new_secret() -> bytes:
    """A fresh random signing key for one agent (32 bytes)."""
    return secrets.token_bytes(32)


def token_for(key: bytes, framework_id: str, executor_id: str, container_id: str) -> str:
    """The token of one executor run (``Slave::generateSecret``'s claims)."""
    return jwt.create({"fid": framework_id, "eid": executor_id, "cid": container_id}, key)


class Unauthorized(Exception):
    """A call that did not authenticate; ``challenge`` is its ``WWW-Authenticate``."""

    def __init__(self, challenge: str) -> None:
        super().__init__(challenge)
        self.challenge = challenge


def authenticate(header: str | None, key: bytes) -> dict[str, str]:
    """The claims of a call's ``Authorization`` header (libprocess' JWT authenticator).

    Raises:
        Unauthorized: no header, not ``Bearer <token>``, or a token that is not valid.
    """
    realm = f'Bearer realm="{EXECUTOR_REALM}"'
    if header is None:
        raise Unauthorized(realm)  # RFC 6750 3.1: no error details without credentials
    parts = header.split(" ")
    if len(parts) != 2:
        raise Unauthorized(f'{realm}, error="invalid_token", '
                           "error_description=\"Malformed 'Authorization' header\"")
    if parts[0] != "Bearer":
        raise Unauthorized(f'{realm}, error="invalid_token", '
                           f"error_description=\"Scheme '{parts[0]}' unsupported\"")
    try:
        payload = jwt.parse(parts[1], key)
    except jwt.JwtError as exc:
        raise Unauthorized(f'{realm}, error="invalid_token", '
                           f'error_description="Invalid JWT: {exc}"') from None
    if not payload:
        raise Unauthorized(f'{realm}, error="invalid_token", '
                           'error_description="JWT claims missing"')
    return {name: value if isinstance(value, str) else json.dumps(value)
            for name, value in payload.items()}


def authenticate_any(header: str | None, keys: Sequence[bytes]) -> dict[str, str]:
    """The claims of a token signed by one of ``keys`` (any agent of this port: a call is
    authenticated before the agent it is for is known, as libprocess does before the handler).

    Raises:
        Unauthorized: as :func:`authenticate`, with the first key's answer.
    """
    refusal: Unauthorized | None = None
    for key in keys:
        try:
            return authenticate(header, key)
        except Unauthorized as exc:
            refusal = refusal or exc
    raise refusal or Unauthorized(f'Bearer realm="{EXECUTOR_REALM}"')


def _principal(claims: Mapping[str, str]) -> str:
    """A principal of claims alone as libprocess prints it (``{"claims":{...}}``)."""
    return json.dumps({"claims": dict(claims)}, separators=(",", ":"))


def claims_error(claims: Mapping[str, Any], framework_id: str, executor_id: str,
                 container_id: str) -> str | None:
    """Why a principal may not make a call of this executor (403), or None
    (``verifyExecutorClaims``)."""
    if claims.get("fid") != framework_id:
        return (f"Authenticated principal '{_principal(claims)}' does not contain an 'fid' "
                f"claim with the framework ID {framework_id}, which is set in the call")
    if claims.get("eid") != executor_id:
        return (f"Authenticated principal '{_principal(claims)}' does not contain an 'eid' "
                f"claim with the executor ID {executor_id}, which is set in the call")
    if claims.get("cid") != container_id:
        return (f"Authenticated principal '{_principal(claims)}' does not contain a 'cid' "
                "claim with the correct active ContainerID")
    return None
