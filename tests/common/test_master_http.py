from __future__ import annotations

import base64

from disauto.common.master_http import master_request


def test_a_principal_travels_as_basic_authentication() -> None:
    request = master_request("http://m:5050/master/slaves", "alice", "s3cret")
    assert request.full_url == "http://m:5050/master/slaves"
    token = base64.b64encode(b"alice:s3cret").decode()
    assert request.get_header("Authorization") == f"Basic {token}"


def test_without_a_principal_no_header() -> None:
    assert master_request("http://m:5050/version").get_header("Authorization") is None
