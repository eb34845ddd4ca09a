"""Where the Mesos master is, and whether it takes this framework: reachable, and accepting its
credentials (asked before subscribing, so that a wrong ``--master`` or secret is one line at once
rather than pymesos retrying until its registration timeout); and this machine's address as the
master's network sees it.
"""

from __future__ import annotations

from dataclasses import dataclass
import json
import socket
from urllib.error import HTTPError
from urllib.request import urlopen

from disauto.common.master_http import master_request
from disauto.common.zk_masters import ZooKeeperError
from disauto.common.zk_masters import is_zk
from disauto.common.zk_masters import leading_master


class MasterUnreachableError(ConnectionError):
    """The Mesos master cannot be reached or refuses the framework."""


@dataclass(frozen=True)
class MasterEndpoint:
    """Where the Mesos master is, and how to authenticate to it."""

    uri: str
    """``host:port`` or ``zk://host:port/mesos`` (the leader is read from ZooKeeper as Mesos'
    detectors read it: :mod:`common.zk_masters`)."""
    principal: str | None = None
    secret: str | None = None
    agent_principal: str | None = None
    """Who reads the agents' HTTP endpoints (``--agent-principal``; da-submit defaults it to
    ``principal``): sent on every read of an agent, for agents with
    ``--authenticate_http_readonly``."""
    agent_secret: str | None = None

    @property
    def agent_auth(self) -> tuple[str, str] | None:
        """(principal, secret) for the agents' endpoints, or None to send no credentials."""
        if not self.agent_principal:
            return None
        return self.agent_principal, self.agent_secret or ""


ANSWER_SECONDS = 60.0
"""How long a master that took the connection may take to answer ``/version``: it is there,
only busy (50 jobs submitted at once to one embedded master on a loaded 2-core machine: 6 of
them ended at once, "timed out", with the 5 s the connection gets)."""


def check_master(uri: str, timeout: float = 5.0, answer_timeout: float = ANSWER_SECONDS) -> str:
    """GET /version of a ``host:port`` master; return its version. The connection must be
    made within ``timeout`` seconds, the answer within ``answer_timeout`` more.

    Raises:
        MasterUnreachableError: naming the address and the cause.
    """
    if is_zk(uri):
        address = _leader_or_none(uri, timeout)
        if address is None:
            return ""  # none leads yet: pymesos waits for one, within the registration timeout
    else:
        address = uri if ":" in uri else f"{uri}:5050"
    host, _, port = address.rpartition(":")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout).close()
        with urlopen(f"http://{address}/version",  # noqa: S310 - the master's URL
                     timeout=answer_timeout) as response:
            return str(json.loads(response.read())["version"])
    except (OSError, ValueError, KeyError) as err:
        raise MasterUnreachableError(
            f"cannot reach the Mesos master at {address} ({err}); check --master"
        ) from None


def _leader_or_none(uri: str, timeout: float) -> str | None:
    """``host:port`` of the master leading under a ``zk://`` URL, None while none leads.

    Raises:
        MasterUnreachableError: a bad URL, or ZooKeeper does not answer.
    """
    try:
        return leading_master(uri, timeout)
    except ValueError as err:
        raise MasterUnreachableError(f"--master: {err}") from None
    except ZooKeeperError as err:
        raise MasterUnreachableError(f"{err}; check --master") from None


def check_credentials(uri: str, principal: str | None, secret: str | None,
                      timeout: float = 5.0) -> None:
    """Ask the scheduler endpoint whether these credentials (or none) are accepted.

    A master authenticates a scheduler call before anything else, so a GET answers 401 for
    missing or wrong credentials and 405 (POST expected) for accepted ones; pymesos would
    otherwise retry a refused SUBSCRIBE until its registration timeout.

    Raises:
        MasterUnreachableError: the master refuses them, naming what to give.
    """
    if is_zk(uri):
        leader = _leader_or_none(uri, timeout)
        if leader is None:
            return
        address = leader
    else:
        address = uri if ":" in uri else f"{uri}:5050"
    request = master_request(f"http://{address}/api/v1/scheduler", principal or "",
                             secret or "")
    try:
        with urlopen(request, timeout=timeout):  # noqa: S310 - the master's URL
            return
    except HTTPError as err:
        if err.code != 401:
            return  # 405 and the like: the credentials passed
    except OSError:
        return  # reachability was checked; pymesos reports what follows
    if principal:
        raise MasterUnreachableError(
            f"the Mesos master at {address} refused principal {principal!r}; check "
            "--principal and --secret-file") from None
    raise MasterUnreachableError(
        f"the Mesos master at {address} requires authentication; give --principal and "
        "--secret-file") from None


def advertise_host_for(master_uri: str) -> str:
    """The address of this machine as seen from the master's network."""
    target = master_uri.split("://", 1)[-1].split("/", 1)[0].split(",", 1)[0]
    host, _, port = target.partition(":")
    if host in ("127.0.0.1", "localhost", "::1"):
        return "127.0.0.1"
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.connect((host, int(port or 5050)))
            return str(probe.getsockname()[0])
    except OSError:
        return socket.getfqdn()
