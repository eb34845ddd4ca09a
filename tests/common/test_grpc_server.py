"""The gRPC server factory: services registered, a free port picked, a taken port an error."""

from __future__ import annotations

import socket

import grpc
import pytest

from disauto.common.grpc_server import make_server


pytestmark = pytest.mark.integration  # starts processes or servers


def test_a_free_port_is_picked_and_services_are_registered() -> None:
    registered: list[grpc.Server] = []
    server, port = make_server(registered.append, "127.0.0.1", 0, what="the test server")
    assert registered == [server] and 0 < port < 65536
    server.start()
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            pass
    finally:
        server.stop(None)


def test_a_port_another_server_holds_is_an_os_error_not_a_shared_port() -> None:
    first, port = make_server(lambda server: None, "127.0.0.1", 0)
    first.start()
    try:
        with pytest.raises(OSError, match=f"cannot bind the second server to 127.0.0.1:{port}"):
            make_server(lambda server: None, "127.0.0.1", port, what="the second server")
    finally:
        first.stop(None)
