"""The framework's address, looked up in the master's ``/master/frameworks``."""

from __future__ import annotations

from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from http.server import ThreadingHTTPServer
import json
import threading
from typing import Any

import pytest

from disauto.common.rendezvous import framework_address
from disauto.common.task_env import FRAMEWORK_ADDRESS_LABEL


pytestmark = pytest.mark.integration


def _framework(fid: str, address: str | None) -> dict[str, Any]:
    framework: dict[str, Any] = {"id": fid, "name": "job"}
    if address is not None:
        framework["labels"] = [{"key": "disauto.job", "value": "j"},
                               {"key": FRAMEWORK_ADDRESS_LABEL, "value": address}]
    return framework


@pytest.fixture
def master() -> Iterator[tuple[str, dict[str, Any]]]:
    answer: dict[str, Any] = {"status": 200, "body": {"frameworks": []}}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            body = answer["body"]
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
            self.send_response(answer["status"])
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"127.0.0.1:{server.server_address[1]}", answer
    server.shutdown()
    server.server_close()


def test_the_label_of_the_framework_with_that_id(master: tuple[str, dict[str, Any]]) -> None:
    address, answer = master
    answer["body"] = {"frameworks": [_framework("other", "10.0.0.9:1"),
                                     _framework("fw-1", "10.0.0.5:40123")],
                      "completed_frameworks": []}
    assert framework_address(address, "fw-1") == "10.0.0.5:40123"


@pytest.mark.parametrize("body", [
    {"frameworks": [], "completed_frameworks": [{"id": "fw-1"}]},  # torn down
    {"frameworks": [_framework("fw-1", None)]},  # no label (not a DisAuto framework)
    {"frameworks": "nonsense"},
    b"not json",
])
def test_nothing_when_the_master_does_not_tell(master: tuple[str, dict[str, Any]],
                                               body: Any) -> None:
    address, answer = master
    answer["body"] = body
    assert framework_address(address, "fw-1") == ""


def test_nothing_from_a_master_that_refuses_or_is_gone(
        master: tuple[str, dict[str, Any]]) -> None:
    address, answer = master
    answer["status"] = 401  # --authenticate_http_readonly
    assert framework_address(address, "fw-1") == ""
    assert framework_address("127.0.0.1:1", "fw-1", timeout=1) == ""
    assert framework_address("", "fw-1") == ""
