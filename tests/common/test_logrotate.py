"""The log pump shared by the embedded agent and the warm slots' executor."""

from __future__ import annotations

import os
from pathlib import Path

from disauto.common.logrotate import MIN_SIZE
from disauto.common.logrotate import LogPump
from disauto.common.logrotate import Rotation


def test_a_named_pipe_is_read_to_the_end_of_a_writer_that_opens_it_late(tmp_path: Path) -> None:
    fifo = tmp_path / "out.fifo"
    pump = LogPump.fifo(tmp_path / "stdout", Rotation(MIN_SIZE, 1), fifo)
    written = b"".join(f"line {n:06d}\n".encode() for n in range(2000))
    for _ in range(2):  # two writers in turn: the first closing is no end of file
        fd = os.open(fifo, os.O_WRONLY | os.O_APPEND)
        os.write(fd, written)
        os.close(fd)
    assert pump.drain(5.0)
    assert not fifo.exists()  # removed once drained
    kept = (tmp_path / "stdout.1").read_bytes() + (tmp_path / "stdout").read_bytes()
    assert (written * 2).endswith(kept) and kept.endswith(b"line 001999\n")
    assert all(p.stat().st_size <= MIN_SIZE for p in tmp_path.iterdir())
