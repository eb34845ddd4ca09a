"""Embedded clusters booted by ``--master local`` offer a port range nobody listens on."""

from __future__ import annotations

import os
from pathlib import Path
import socket

import pytest

from disauto.submit.local import free_port_range


pytestmark = pytest.mark.integration  # starts processes or servers


def _listening_below_the_ephemeral_ports() -> tuple[socket.socket, int]:
    """A socket listening on a port below the kernel's ephemeral range and the embedded
    agents' (31000 up): the ranges around it are free unless someone listens there (in the
    ephemeral range, a loaded machine's many connections made every range look busy, and the
    first was returned)."""
    first = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    for port in range(20000 + os.getpid() % 5000, min(first, 31000) - 200):
        busy = socket.socket()
        try:
            busy.bind(("0.0.0.0", port))
        except OSError:
            busy.close()
            continue
        busy.listen()
        return busy, port
    raise AssertionError("no free port below the ephemeral range")


def test_a_busy_range_is_skipped_for_the_next_free_one() -> None:
    busy, port = _listening_below_the_ephemeral_ports()
    with busy:
        low = port - port % 10
        begin, end = free_port_range(span=10, low=low, high=low + 100)
        assert end - begin == 9 and begin % 10 == 0 and low < begin < low + 100
        assert not begin <= port <= end


def test_when_everything_is_busy_the_first_range_is_returned() -> None:
    with socket.socket() as busy:
        busy.bind(("0.0.0.0", 0))
        port = busy.getsockname()[1]
        assert free_port_range(span=1, low=port, high=port + 1) == (port, port)
