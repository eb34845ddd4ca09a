"""Requests to a Mesos master's (or agent's) HTTP endpoints, with its HTTP authentication when it
has one."""

from __future__ import annotations

import base64
from urllib.request import Request


def master_request(url: str, principal: str = "", secret: str = "") -> Request:
    """A GET of ``url`` carrying ``Authorization: Basic`` for ``principal`` (none without one),
    as Mesos' HTTP authenticator expects (a master's, or an agent's with
    ``--authenticate_http_readonly``)."""
    request = Request(url)
    if principal:
        token = base64.b64encode(f"{principal}:{secret}".encode()).decode()
        request.add_header("Authorization", f"Basic {token}")
    return request
