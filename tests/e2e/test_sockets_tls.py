"""Issue 14 end to end: a local job listens on loopback alone, and a --tls job reports through
TLS with no private key in the master's state."""

from __future__ import annotations

import ipaddress
import json
import os
from pathlib import Path
from typing import Any

import pytest

from disauto.common.processes import with_environment
from disauto.common.task_env import JOB_ID
from tests.e2e.conftest import common_flags
from tests.e2e.conftest import master_state


pytestmark = pytest.mark.slow

LISTEN = "0A"  # TCP_LISTEN in /proc/net/tcp


def _listening_inodes() -> dict[str, str]:
    """inode → ``address`` of every listening TCP socket of this network namespace."""
    found: dict[str, str] = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for row in Path(table).read_text().splitlines()[1:]:
            fields = row.split()
            if fields[3] == LISTEN:
                found[fields[9]] = _address(fields[1].split(":")[0])
    return found


def _address(hex_ip: str) -> str:
    """The address of a /proc/net/tcp(6) field (32-bit words in host byte order)."""
    raw = bytes.fromhex(hex_ip)
    words = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
    address = ipaddress.ip_address(words)
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
        return str(address.ipv4_mapped)
    return str(address)


def listeners(pids: list[int]) -> dict[int, list[str]]:
    """The addresses each process listens on."""
    inodes = _listening_inodes()
    found: dict[int, list[str]] = {}
    for pid in pids:
        try:
            links = [os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")]
        except OSError:
            continue  # gone meanwhile
        for link in links:
            inode = link[len("socket:["):-1] if link.startswith("socket:[") else ""
            if inode in inodes:
                found.setdefault(pid, []).append(inodes[inode])
    return found


def test_a_local_tls_job_listens_on_loopback_only_and_reports_through_tls(
        submit: Any, workdir: Path) -> None:
    job = submit(*common_flags(workdir, "--trail-steps", "4", "--parallelism", "2",
                               "--tuning-type", "random-search", "--tls"),
                 env={"RUNNER_SLEEP": "3"})
    job.wait_for_line(r"gRPC over TLS, certificate SHA-256 [0-9A-F:]{95}")
    job.wait_running_trials(2)
    job_dir = job.job_dir()
    pids = [job.process.pid, *with_environment(JOB_ID, job_dir.name)]
    found = listeners(pids)
    addresses = [address for each in found.values() for address in each]
    # da-submit: the master's HTTP API, the file server, the framework's gRPC; AppCore's gRPC
    assert len(addresses) >= 4, found
    assert all(ipaddress.ip_address(a).is_loopback for a in addresses), found
    state = json.dumps(master_state(job.master_url()))
    assert "PRIVATE KEY" not in state and "BEGIN CERTIFICATE" not in state
    assert (job_dir / "job.token").read_text().strip() not in state

    assert job.wait() == 0, job.output
    results = job.results()
    assert len([t for t in results["trials"] if t["state"] == "COMPLETED"]) == 4, results
    key = job_dir / "tls" / "key.pem"
    assert key.stat().st_mode & 0o077 == 0 and (job_dir / "tls").stat().st_mode & 0o077 == 0
