"""TLS on DisAuto's gRPC channels and servers, for whichever side holds which certificate.

A server with an identity (a certificate and its key) serves TLS, one without serves plain
gRPC. A client given a certificate (PEM) trusts that certificate alone — no system CA — and
checks the name given with it (``grpc.ssl_target_name_override``), not the host it dials: a
task knows the certificate from its environment (see ``task_env``), and the agent's host name
it dials need not be in a self-signed certificate. Without a certificate the channel is plain.

Only grpcio is needed here (the runner's SDK uses it); making certificates is
``common.certificates`` (the ``cryptography`` package).
"""

from __future__ import annotations

from collections.abc import Mapping

import grpc

from disauto.common import task_env


__all__ = ["APPCORE_SERVER_NAME", "FRAMEWORK_SERVER_NAME", "ServerTls", "channel",
           "framework_trust", "server_credentials"]

FRAMEWORK_SERVER_NAME = "disauto-framework"
"""The name in a job's self-signed framework certificate (``da-submit --tls``)."""

APPCORE_SERVER_NAME = "disauto-appcore"
"""The name in the certificate every AppCore makes for itself when the job uses TLS."""

ServerTls = tuple[bytes, bytes]
"""A server's ``(private key PEM, certificate PEM)``."""


def server_credentials(identity: ServerTls) -> grpc.ServerCredentials:
    """TLS credentials of a server (no client certificates: callers prove themselves with
    their job or trial token)."""
    key_pem, cert_pem = identity
    return grpc.ssl_server_credentials([(key_pem, cert_pem)])


def channel(address: str, cert_pem: str | bytes = "", server_name: str = "") -> grpc.Channel:
    """A channel to ``address``: TLS trusting only ``cert_pem`` (and checking ``server_name``
    in it) when given, else plain."""
    if not cert_pem:
        return grpc.insecure_channel(address)
    roots = cert_pem.encode() if isinstance(cert_pem, str) else cert_pem
    options = [("grpc.ssl_target_name_override", server_name)] if server_name else []
    return grpc.secure_channel(address, grpc.ssl_channel_credentials(root_certificates=roots),
                               options=options)


def framework_trust(environ: Mapping[str, str]) -> tuple[str, str]:
    """``(certificate PEM, server name)`` of the framework as a task's environment gives them;
    ``("", "")`` when the job runs without TLS."""
    cert = environ.get(task_env.FRAMEWORK_CERT, "")
    if not cert:
        return "", ""
    return cert, environ.get(task_env.FRAMEWORK_TLS_NAME) or FRAMEWORK_SERVER_NAME
