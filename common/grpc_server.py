"""One way to make a gRPC server: a bounded thread pool, one port, and a taken port an error.

gRPC sets ``SO_REUSEPORT`` by default, so a second server could bind a port another process
(a stale AppCore on the same agent) still serves, and the kernel would split the connections
between them. Both of DisAuto's servers (the framework's and AppCore's) turn it off, so that a
taken port is an ``OSError`` the caller can act on (pick another, fail with one line).
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent import futures

import grpc

from disauto.common.tls import ServerTls
from disauto.common.tls import server_credentials


__all__ = ["make_server"]


def make_server(register: Callable[[grpc.Server], None], host: str, port: int, *,
                what: str = "the gRPC server", workers: int = 16,
                tls: ServerTls | None = None) -> tuple[grpc.Server, int]:
    """A (not started) server with its services, and the port it bound.

    Args:
        register: adds the services, e.g. ``lambda s: add_XServicer_to_server(servicer, s)``.
        host: the address to listen on.
        port: the port; 0 picks a free one.
        what: names the server in the error.
        workers: the most calls served at once.
        tls: ``(key PEM, certificate PEM)``: serve TLS only; None serves plain gRPC.

    Raises:
        OSError: the port cannot be bound (``cannot bind <what> to host:port``).
    """
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=workers),
                         options=[("grpc.so_reuseport", 0)])
    register(server)
    # grpcio raises RuntimeError when the bind fails (older releases returned 0).
    try:
        address = f"{host}:{port}"
        bound = (server.add_secure_port(address, server_credentials(tls)) if tls
                 else server.add_insecure_port(address))
    except RuntimeError:
        bound = 0
    if bound == 0:
        raise OSError(f"cannot bind {what} to {host}:{port}")
    return server, bound
