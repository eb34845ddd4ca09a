"""TLS on a real gRPC server: the right certificate passes; plain text and a wrong one do not."""

from __future__ import annotations

from collections.abc import Iterator

import grpc
import pytest

from disauto.common import grpc_server
from disauto.common import tls
from disauto.common.certificates import Identity
from disauto.common.certificates import generate


pytestmark = pytest.mark.integration

METHOD = "/test.Echo/Echo"


def _echo(request: bytes, context: grpc.ServicerContext) -> bytes:
    return request


def _register(server: grpc.Server) -> None:
    handler = grpc.unary_unary_rpc_method_handler(_echo)
    server.add_generic_rpc_handlers(
        [grpc.method_handlers_generic_handler("test.Echo", {"Echo": handler})])


@pytest.fixture
def served() -> Iterator[tuple[str, Identity]]:
    identity = generate(tls.FRAMEWORK_SERVER_NAME)
    server, port = grpc_server.make_server(_register, "127.0.0.1", 0,
                                           tls=(identity.key_pem, identity.cert_pem))
    server.start()
    try:
        yield f"127.0.0.1:{port}", identity
    finally:
        server.stop(grace=0).wait()


def echo(channel: grpc.Channel) -> bytes:
    with channel:
        return bytes(channel.unary_unary(METHOD)(b"ping", timeout=5))


def test_a_client_trusting_the_certificate_gets_through(served: tuple[str, Identity]) -> None:
    address, identity = served
    assert echo(tls.channel(address, identity.cert_pem, identity.server_name)) == b"ping"


def test_a_plaintext_client_is_refused(served: tuple[str, Identity]) -> None:
    address, _ = served
    with pytest.raises(grpc.RpcError) as err:
        echo(tls.channel(address))
    assert err.value.code() == grpc.StatusCode.UNAVAILABLE


def test_a_client_trusting_another_certificate_is_refused(
        served: tuple[str, Identity]) -> None:
    address, identity = served
    impostor = generate(identity.server_name)  # the same name, another key
    with pytest.raises(grpc.RpcError) as err:
        echo(tls.channel(address, impostor.cert_pem, identity.server_name))
    assert err.value.code() == grpc.StatusCode.UNAVAILABLE


def test_a_client_checking_another_name_is_refused(served: tuple[str, Identity]) -> None:
    address, identity = served
    with pytest.raises(grpc.RpcError) as err:
        echo(tls.channel(address, identity.cert_pem, tls.APPCORE_SERVER_NAME))
    assert err.value.code() == grpc.StatusCode.UNAVAILABLE


def test_framework_trust_reads_the_task_environment() -> None:
    assert tls.framework_trust({}) == ("", "")
    assert tls.framework_trust({"DISAUTO_FRAMEWORK_CERT": "PEM"}) == (
        "PEM", tls.FRAMEWORK_SERVER_NAME)
