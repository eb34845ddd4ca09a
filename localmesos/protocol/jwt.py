"""JSON Web Tokens signed with HMAC SHA-256, as libprocess makes and checks them.

An agent that authenticates its executors (Mesos ``--authenticate_http_executors``) gives each
executor a token in ``MESOS_EXECUTOR_AUTHENTICATION_TOKEN``: a JWT whose claims name the
executor's framework, executor and container (``fid``, ``eid``, ``cid``), signed with the
agent's secret (apache/mesos ``src/authentication/executor/jwt_secret_generator.cpp``,
``3rdparty/libprocess/src/jwt.cpp``). The executor presents it as ``Authorization: Bearer
<token>``; the agent checks the signature here (``JWT::parse``, with its messages) and the
claims against the call (:mod:`localmesos.agent.executor_auth`).

Header ``{"alg":"HS256","typ":"JWT"}``, base64url without padding; ``exp`` is honoured when a
token has one (libprocess' tokens have none).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import time
from typing import Any


class JwtError(ValueError):
    """A token that is not a valid JWT for the key; the message is libprocess'."""


def _encode(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _decode(component: str) -> bytes:
    padded = component + "=" * (-len(component) % 4)
    try:
        return base64.urlsafe_b64decode(padded.encode("ascii"))
    except (binascii.Error, ValueError, UnicodeEncodeError) as exc:
        raise JwtError(f"Failed to base64url-decode: {exc}") from None


def _sign(message: str, key: bytes) -> bytes:
    return hmac.new(key, message.encode("ascii"), hashlib.sha256).digest()


def create(claims: dict[str, Any], key: bytes) -> str:
    """A JWT of ``claims`` signed HS256 with ``key`` (libprocess ``JWT::create``)."""
    header = _encode(json.dumps({"alg": "HS256", "typ": "JWT"},
                                separators=(",", ":")).encode())
    payload = _encode(json.dumps(claims, separators=(",", ":"), sort_keys=True).encode())
    return f"{header}.{payload}.{_encode(_sign(f'{header}.{payload}', key))}"


def _object(component: str, what: str) -> dict[str, Any]:
    try:
        value = json.loads(_decode(component).decode("utf-8"))
    except JwtError as exc:
        raise JwtError(f"Failed to decode token {what}: {exc}") from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise JwtError(f"Failed to decode token {what}: Failed to parse into JSON: {exc}"
                       ) from None
    if not isinstance(value, dict):
        raise JwtError(f"Failed to decode token {what}: Failed to parse into JSON: "
                       "not an object")
    return value


def parse(token: str, key: bytes, *, now: float | None = None) -> dict[str, Any]:
    """The claims of ``token`` once its HS256 signature by ``key`` is checked
    (libprocess ``JWT::parse(token, secret)``).

    Raises:
        JwtError: with libprocess' message (``Token signature does not match``, ...).
    """
    components = token.split(".")
    if len(components) != 3:
        raise JwtError(f"Expected 3 components in token, got {len(components)}")
    header = _object(components[0], "header")
    alg = header.get("alg")
    if alg is None:
        raise JwtError("Failed to locate 'alg' in token JSON header")
    if not isinstance(alg, str):
        raise JwtError("Token 'alg' field is not a string")
    if alg not in ("none", "HS256", "RS256"):
        raise JwtError(f"Unsupported token algorithm: {alg}")
    if "crit" in header:
        raise JwtError("Token 'crit' field is unsupported")
    if alg != "HS256":
        raise JwtError(f'Token \'alg\' value "{alg}" does not match, expected "HS256"')
    payload = _object(components[1], "payload")
    expiry = payload.get("exp")
    if expiry is not None:
        if not isinstance(expiry, int | float) or isinstance(expiry, bool):
            raise JwtError("JSON payload 'exp' field is not a number")
        moment = int(time.time() if now is None else now)
        if int(expiry) < moment:
            raise JwtError(f"Token has expired: exp({int(expiry)}) < now({moment})")
    try:
        signature = _decode(components[2])
    except JwtError as exc:
        raise JwtError(f"Failed to base64url-decode token signature: {exc}") from None
    if not hmac.compare_digest(_sign(f"{components[0]}.{components[1]}", key), signature):
        raise JwtError("Token signature does not match")
    return payload
