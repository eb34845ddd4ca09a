"""tools/apt.sh: an apt-get that finds another one's lock waits for it, as a person would,
instead of failing at once (in a fresh-clone ``make test`` every Docker test once errored at
setup because an apt-get of the machine's held dpkg's lock)."""

from __future__ import annotations

from collections.abc import Iterator
import contextlib
import fcntl
import os
from pathlib import Path
import subprocess
import threading
import time

import pytest


pytestmark = [pytest.mark.integration,  # runs apt-get
              pytest.mark.skipif(os.geteuid() != 0, reason="apt-get's locks need root")]

ROOT = Path(__file__).resolve().parents[2]
HELD = 2.0


@contextlib.contextmanager
def held(lock: str, seconds: float = HELD) -> Iterator[None]:
    """Hold ``lock`` (an fcntl lock, as apt and dpkg take them) for ``seconds`` from now."""
    handle = open(lock, "a")  # noqa: SIM115 - closed by the thread below
    fcntl.lockf(handle, fcntl.LOCK_EX)

    def release() -> None:
        time.sleep(seconds)
        handle.close()

    thread = threading.Thread(target=release)
    thread.start()
    try:
        yield
    finally:
        thread.join()


def apt_get(*args: str) -> tuple[subprocess.CompletedProcess[str], float]:
    started = time.monotonic()
    done = subprocess.run(["bash", "-c", f'source "{ROOT}/tools/apt.sh"; apt_get "$@"', "bash",
                           *args], capture_output=True, text=True, timeout=300, check=False)
    return done, time.monotonic() - started


def test_an_install_waits_for_dpkgs_lock() -> None:
    # With no package named, install changes nothing, but takes dpkg's frontend lock.
    with held("/var/lib/dpkg/lock-frontend"):
        done, took = apt_get("install", "-y", "-qq")
    assert done.returncode == 0, done.stderr
    assert took >= HELD - 0.5


def test_an_update_waits_for_the_lists_lock() -> None:
    with held("/var/lib/apt/lists/lock"):
        done, took = apt_get("update", "-qq")
    assert done.returncode == 0, done.stderr
    assert took >= HELD - 0.5 and "Could not get lock" not in done.stderr


def test_the_wait_ends_with_apts_own_error() -> None:
    environ = {**os.environ, "DISAUTO_APT_LOCK_TIMEOUT": "1"}
    with held("/var/lib/apt/lists/lock", seconds=4.0):
        done = subprocess.run(["bash", "-c", f'source "{ROOT}/tools/apt.sh"; apt_get update -qq'],
                              capture_output=True, text=True, timeout=60, check=False,
                              env=environ)
    assert done.returncode == 1
    assert "Could not get lock /var/lib/apt/lists/lock" in done.stderr


@pytest.mark.parametrize("script", ["ensure_docker.sh", "ensure_browser.sh"])
def test_the_tools_install_through_it(script: str) -> None:
    text = (ROOT / "tools" / script).read_text()
    assert 'source "$(dirname "${BASH_SOURCE[0]}")/apt.sh"' in text
    assert [line for line in text.splitlines() if "apt-get " in line
            and not line.lstrip().startswith(("#", "say"))] == []
