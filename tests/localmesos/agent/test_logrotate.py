"""Capped, rotated sandbox logs (Mesos' logrotate container logger) on the embedded agent."""

from __future__ import annotations

import argparse
from pathlib import Path
import sys
import time

import pytest

from disauto.common.logrotate import DEFAULT_SANDBOX_LOGGING
from disauto.common.logrotate import MIN_SIZE
from disauto.common.logrotate import LogRotateError
from disauto.common.logrotate import RotatingFile
from disauto.common.logrotate import Rotation
from disauto.common.logrotate import SandboxLogging
from disauto.common.logrotate import parse_options
from disauto.localmesos.cli import UsageError
from disauto.localmesos.cli import build_parser
from disauto.localmesos.cli import config_from_args
from tests.localmesos.cluster_support import RawFramework
from tests.localmesos.cluster_support import command_task
from tests.localmesos.cluster_support import running_cluster


def _args(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(list(argv))


def test_options_and_defaults() -> None:
    assert parse_options("") == 0  # logrotate's own default
    assert parse_options("rotate 3") == 3
    assert parse_options("rotate 2\n") == 2
    with pytest.raises(LogRotateError, match="only 'rotate N'"):
        parse_options("compress")
    with pytest.raises(LogRotateError, match="one memory page"):
        Rotation(MIN_SIZE - 1)
    assert DEFAULT_SANDBOX_LOGGING.stdout == Rotation(10 * 1024 * 1024, 1)
    assert SandboxLogging.from_flags(8192, "rotate 2", 4096, "").stderr == Rotation(4096, 0)


def test_da_cluster_flags() -> None:
    config = config_from_args(_args("--max-stdout-size", "1MB", "--logrotate-stdout-options",
                                    "rotate 3"))
    assert config.sandbox_logging is not None
    assert config.sandbox_logging.stdout == Rotation(1024 * 1024, 3)
    assert config.sandbox_logging.stderr == DEFAULT_SANDBOX_LOGGING.stderr
    with pytest.raises(UsageError, match="^--max-stderr-size: "):
        config_from_args(_args("--max-stderr-size", "1KB"))
    with pytest.raises(UsageError, match="^--logrotate-stdout-options: "):
        config_from_args(_args("--logrotate-stdout-options", "daily"))


@pytest.mark.parametrize("rotate", [0, 1, 3])
def test_rotating_file_keeps_the_tail_within_the_cap(tmp_path: Path, rotate: int) -> None:
    path = tmp_path / "stdout"
    log = RotatingFile(path, Rotation(MIN_SIZE, rotate))
    lines = [f"line {n:06d}\n".encode() for n in range(5000)]
    for line in lines:
        log.write(line)
    log.close()
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["stdout"] + [f"stdout.{n}" for n in range(1, rotate + 1)]
    assert all(p.stat().st_size <= MIN_SIZE for p in tmp_path.iterdir())
    kept = b"".join((tmp_path / name).read_bytes()
                    for name in [f"stdout.{n}" for n in range(rotate, 0, -1)] + ["stdout"])
    everything = b"".join(lines)
    assert everything.endswith(kept) and kept.endswith(b"line 004999\n")


@pytest.mark.integration
def test_a_task_printing_100_mb_finishes_and_its_sandbox_stays_capped(tmp_path: Path) -> None:
    """A real process writes 100 MB to stdout as fast as it can (and 100 MB to stderr): it is
    not blocked, ends FINISHED, and its sandbox keeps only the last bytes within the caps."""
    cap = 1024 * 1024
    logs = SandboxLogging(Rotation(cap, 2), Rotation(cap, 0))
    script = (
        "import os, sys\n"
        "block = (b'x' * 1023 + b'\\n') * 1024\n"
        "for _ in range(100):\n"
        "    os.write(1, block)\n"
        "    os.write(2, block)\n"
        "os.write(1, b'THE LAST STDOUT LINE\\n')\n"
        "os.write(2, b'THE LAST STDERR LINE\\n')\n"
    )
    with running_cluster(work_dir=tmp_path, sandbox_logging=logs) as cluster:
        raw = RawFramework(cluster.address, auto_acknowledge=True)
        raw.subscribe()
        offer = raw.wait_event(lambda e: e["type"] == "OFFERS")["offers"]["offers"][0]
        task = command_task(offer, "flood", f"{sys.executable} -c \"{script}\"")
        started = time.monotonic()
        raw.accept([offer["id"]["value"]],
                   [{"type": "LAUNCH", "launch": {"task_infos": [task]}}])
        end = raw.wait_event(lambda e: e["type"] == "UPDATE" and e["update"]["status"]["state"]
                             in ("TASK_FINISHED", "TASK_FAILED"), timeout=120)
        elapsed = time.monotonic() - started
        assert end["update"]["status"]["state"] == "TASK_FINISHED", end
        sandbox = next(tmp_path.glob("slaves/*/frameworks/*/executors/flood/runs/*"))
        files = {p.name: p.stat().st_size for p in sandbox.iterdir() if p.name.startswith("std")}
        assert set(files) == {"stdout", "stdout.1", "stdout.2", "stderr"}, files
        assert all(size <= cap for size in files.values()), files
        assert (sandbox / "stdout").read_bytes().endswith(b"THE LAST STDOUT LINE\n")
        assert (sandbox / "stderr").read_bytes().endswith(b"THE LAST STDERR LINE\n")
        raw.call("TEARDOWN")
        raw.close()
    print(f"100 MB + 100 MB through the sandbox logger in {elapsed:.1f} s")
    assert elapsed < 60
