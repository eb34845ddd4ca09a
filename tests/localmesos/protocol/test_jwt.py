"""JWTs as libprocess makes and checks them (``3rdparty/libprocess/src/jwt.cpp``)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json

import pytest

from disauto.localmesos.protocol import jwt


KEY = b"agent secret"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def test_a_token_is_a_standard_hs256_jwt() -> None:
    token = jwt.create({"fid": "f", "eid": "e", "cid": "c"}, KEY)
    header, payload, signature = token.split(".")
    assert json.loads(base64.urlsafe_b64decode(header + "==")) == {"alg": "HS256",
                                                                      "typ": "JWT"}
    assert json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4))) == {
        "cid": "c", "eid": "e", "fid": "f"}
    expected = hmac.new(KEY, f"{header}.{payload}".encode(), hashlib.sha256).digest()
    assert signature == _b64(expected) and "=" not in token
    assert jwt.parse(token, KEY) == {"fid": "f", "eid": "e", "cid": "c"}


EMPTY = _b64(b"{}")
NONE = _b64(b'{"alg": "none"}')
HS512 = _b64(b'{"alg": "HS512"}')


@pytest.mark.parametrize(("token", "message"), [
    ("a.b", "Expected 3 components in token, got 2"),
    (f"{EMPTY}.{EMPTY}.x", "Failed to locate 'alg' in token JSON header"),
    (f"{NONE}.{EMPTY}.", 'Token \'alg\' value "none" does not match, expected "HS256"'),
    (f"{HS512}.{EMPTY}.x", "Unsupported token algorithm: HS512"),
    (f"{_b64(b'[1]')}.{EMPTY}.x", "Failed to decode token header"),
])
def test_malformed_tokens_get_libprocess_messages(token: str, message: str) -> None:
    with pytest.raises(jwt.JwtError) as err:
        jwt.parse(token, KEY)
    assert str(err.value).startswith(message)


def test_another_key_or_a_changed_claim_does_not_match() -> None:
    token = jwt.create({"eid": "mine"}, KEY)
    with pytest.raises(jwt.JwtError, match="^Token signature does not match$"):
        jwt.parse(token, b"another agent")
    header, _, signature = token.split(".")
    forged = f"{header}.{_b64(json.dumps({'eid': 'theirs'}).encode())}.{signature}"
    with pytest.raises(jwt.JwtError, match="^Token signature does not match$"):
        jwt.parse(forged, KEY)


def test_an_expired_token_is_refused() -> None:
    token = jwt.create({"exp": 100}, KEY)
    assert jwt.parse(token, KEY, now=99) == {"exp": 100}
    with pytest.raises(jwt.JwtError, match=r"^Token has expired: exp\(100\) < now\(101\)$"):
        jwt.parse(token, KEY, now=101)
