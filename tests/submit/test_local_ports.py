"""Embedded clusters booted by ``--master local`` offer a port range nobody listens on."""

from __future__ import annotations

import socket

import pytest

from disauto.submit.local import free_port_range


pytestmark = pytest.mark.integration  # starts processes or servers


def test_a_busy_range_is_skipped_for_the_next_free_one() -> None:
    with socket.socket() as busy:
        busy.bind(("0.0.0.0", 0))
        port = busy.getsockname()[1]
        busy.listen()
        low = port - port % 10
        begin, end = free_port_range(span=10, low=low, high=low + 100)
        assert end - begin == 9 and begin % 10 == 0 and low < begin < low + 100
        assert not begin <= port <= end


def test_when_everything_is_busy_the_first_range_is_returned() -> None:
    with socket.socket() as busy:
        busy.bind(("0.0.0.0", 0))
        port = busy.getsockname()[1]
        assert free_port_range(span=1, low=port, high=port + 1) == (port, port)
