"""Copies each task's stdout and stderr into the job folder while the task writes them.

A task's files live in its agent's sandbox, which goes when the agent (or an embedded cluster)
goes. The collector follows every task of the job through the agent's ``/files`` API, the same
calls the Mesos web UI makes, so it works against real Mesos agents and the embedded ones, and
appends what is new to ``<job folder>/logs/<task id>.stdout`` / ``.stderr``. A task that ended
is read once more, then left alone; :meth:`LogCollector.stop` reads every task a last time.
How far each copy got is kept beside the copies (``logs/.offsets.json``, rewritten after each
poll that copied something: the sandbox offset reached and the copy's length then), so a
resumed framework's collector carries on each copy where its predecessor stopped instead of
copying the task's output again; what a framework appended after its last record and before it
died is cut off the copy first (it is copied again from the recorded offset), and a copy with no
record at all is emptied before its first copy, so nothing is in a copy twice.

Each poll asks a task's agent for the listing of the task's folder (``/files/browse``: the
sizes of its ``stdout``, ``stderr`` and rotated ``.1`` files in one request) and reads only
what grew. A task whose copy is complete (it ended, and its last output is in) is written to
``logs/.done`` (appended, one line per stream: task, stream, offset, bytes trimmed, length) and
forgotten: neither polled again nor kept in memory or in ``.offsets.json``, which holds only
the copies in progress, so a poll, its record and the collector's memory grow with the tasks
running, not with every task the job ran (at scale: rewriting every copy's record each second
made a 10,000-trial job's polls grow with it). A resumed framework's collector reads both.

Bounded, whatever the task prints: one poll copies at most ``max_poll_bytes`` of a file (a
task that writes faster has the middle of its output replaced by one ``[disauto: N bytes
skipped]`` line), and each copy keeps only the newest ``max_task_log_bytes`` (1 MiB by default):
when it grows past that, its beginning is cut at a line boundary and one added first line says how
many bytes were removed. So a job folder holds at most about 1 MiB per task and stream, on a real
Mesos cluster as on the embedded one. A sandbox file the agent rotated (Mesos' logrotate
container logger) is followed from its new beginning, with a line saying so, after the tail of
``<stream>.1`` not copied yet. A rotation is told by the file having shrunk, by its bytes before
the copy's offset no longer being those copied (the last :data:`FINGERPRINT` bytes, read again
when it grew), or, when nothing of it had been copied, by a ``<stream>.1`` that was not there
or not that size at the last poll.
"""

from __future__ import annotations

from collections.abc import Callable
import json
import logging
import os
from pathlib import Path
import threading
from typing import Any
from urllib.parse import urlencode

from disauto.framework._sandbox_logs import SandboxLogs
from disauto.framework._sandbox_logs import task_sandbox_in
from disauto.framework._store import is_disk_full


logger = logging.getLogger(__name__)

STREAMS = ("stdout", "stderr")
MAX_TASK_LOG_BYTES = 1 << 20
"""The newest bytes of each task's stdout and stderr kept in the job folder (1 MiB)."""
HEADER = b"[disauto: "
_NOTES_ROOM = 512
FINGERPRINT = 64
"""The last bytes of a copied stream read again at the next poll that finds it grown, to tell
a rotated file from the same file."""
READ_CHUNK = 16 * 4096
"""A Mesos agent answers at most 16 pages of a file per ``/files/read``."""
Locations = Callable[[], list[tuple[str, str, bool]]]
OFFSETS = ".offsets.json"
"""The file of ``folder`` that says how far each copy in progress got (task, stream → offset in
the sandbox's file, bytes trimmed from the copy, its length)."""
DONE = ".done"
"""The file of ``folder`` that lists the complete copies, one line per task and stream:
``task\tstream\toffset\tremoved\tlength`` (appended)."""
Listing = dict[str, int]
"""A task folder's files and their sizes, from one ``/files/browse``."""


class LogCollector:
    """Follows the job's tasks' stdout/stderr into ``folder``.

    Args:
        logs: the agents' endpoints (filled from offers).
        framework_id: returns the job's framework id (known once registered).
        tasks: returns ``(task_id, agent_id, live)`` for every task launched so far.
        folder: where the copies go (``<job folder>/logs``).
        interval: seconds between polls.
        max_poll_bytes: the most one poll copies of one file.
        max_task_log_bytes: the newest bytes of a task's stream kept in ``folder``.
        slot_of: the warm slot's executor that ran a task ("" for a command task).
        on_full: told when a copy cannot be written for want of space (the job's disk is
            full: its run loop stops the job).
    """

    def __init__(self, logs: SandboxLogs, framework_id: Callable[[], str], tasks: Locations,
                 folder: Path, *, interval: float = 1.0, max_poll_bytes: int = 4 << 20,
                 max_task_log_bytes: int = MAX_TASK_LOG_BYTES,
                 slot_of: Callable[[str], str] | None = None,
                 on_full: Callable[[Path, BaseException], object] | None = None) -> None:
        self._on_full = on_full
        self._logs = logs
        self._framework_id = framework_id
        self._tasks = tasks
        self.folder = folder
        self._interval = interval
        self._max = max_poll_bytes
        self._cap = max_task_log_bytes
        self._slot_of = slot_of or (lambda task_id: "")
        self._offsets: dict[tuple[str, str], int] = {}
        self._removed: dict[tuple[str, str], int] = {}
        self._saved: dict[str, list[int]] = {}
        self._tails: dict[tuple[str, str], bytes] = {}
        """The last bytes copied of each stream's current sandbox file (how a rotation that
        left the file larger than the copy's offset is told)."""
        self._rotated_sizes: dict[tuple[str, str], int] = {}
        """The size of each stream's ``<stream>.1`` when last read (-1: there was none)."""
        self._sandboxes: dict[str, tuple[str, str]] = {}
        self._done: set[str] = set()
        self._finished: list[str] = []
        """Tasks whose copies became complete in this poll (to append to ``.done``)."""
        self._load_offsets()
        self._load_done()
        self._stop = threading.Event()
        self._poll_lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="log-collector", daemon=True)

    def path(self, task_id: str, stream: str) -> Path:
        return self.folder / f"{task_id}.{stream}"

    def _load_offsets(self) -> None:
        """Take over how far an earlier collector of the job (a framework since resumed)
        copied each stream; a missing or unreadable file means from the beginning."""
        try:
            saved = json.loads((self.folder / OFFSETS).read_text())
        except (OSError, ValueError):
            return
        if not isinstance(saved, dict):
            return
        for name, value in saved.items():
            task_id, _, stream = str(name).rpartition("\t")
            if stream not in STREAMS or not isinstance(value, list) or len(value) not in (2, 3):
                continue
            try:
                offset, removed = int(value[0]), int(value[1])
                length = int(value[2]) if len(value) == 3 else None
            except (TypeError, ValueError):
                continue
            self._offsets[(task_id, stream)] = offset
            if removed:
                self._removed[(task_id, stream)] = removed
            if length is not None:
                self._cut_unrecorded(self.path(task_id, stream), length)
        self._saved = self._record()

    def _load_done(self) -> None:
        """The tasks an earlier collector of the job copied completely: done, and forgotten."""
        try:
            lines = (self.folder / DONE).read_text().splitlines()
        except OSError:
            return
        for line in lines:
            fields = line.split("\t")
            if len(fields) == 5 and fields[1] in STREAMS:
                self._done.add(fields[0])
        for task_id in self._done:
            self._forget(task_id)
        self._saved = self._record()

    def _forget(self, task_id: str) -> None:
        """Drop what the collector keeps of a task whose copies are complete."""
        for stream in STREAMS:
            key = (task_id, stream)
            for kept in (self._offsets, self._removed, self._tails, self._rotated_sizes):
                kept.pop(key, None)
        self._sandboxes.pop(task_id, None)

    def _append_done(self) -> None:
        """Append the tasks completed in this poll to ``.done`` (before ``.offsets.json``
        drops them), then forget them."""
        if not self._finished:
            return
        lines = []
        for task_id in self._finished:
            for stream in STREAMS:
                key = (task_id, stream)
                if key not in self._offsets:
                    continue
                length = self._length(task_id, stream)
                lines.append(f"{task_id}\t{stream}\t{self._offsets[key]}\t"
                             f"{self._removed.get(key, 0)}\t{length}\n")
        try:
            with (self.folder / DONE).open("a") as out:
                out.write("".join(lines))
        except OSError as err:  # kept in .offsets.json instead; the next poll tries again
            logger.warning("cannot record the complete log copies: %s", err)
            return
        for task_id in self._finished:
            self._forget(task_id)
        self._finished.clear()

    def _length(self, task_id: str, stream: str) -> int:
        try:
            return self.path(task_id, stream).stat().st_size
        except OSError:
            return 0

    @staticmethod
    def _cut_unrecorded(copy: Path, length: int) -> None:
        """Cut off what was appended to ``copy`` after its length was last recorded."""
        try:
            if copy.stat().st_size > length:
                with copy.open("r+b") as handle:
                    handle.truncate(length)
        except OSError as err:
            logger.warning("cannot cut %s back to its recorded length: %s", copy, err)

    def _record(self) -> dict[str, list[int]]:
        """What ``logs/.offsets.json`` keeps: per copy, [sandbox offset, bytes cut off its
        beginning, its length]."""
        return {f"{task_id}\t{stream}": [offset, self._removed.get((task_id, stream), 0),
                                          self._length(task_id, stream)]
                for (task_id, stream), offset in self._offsets.items()}

    def _save_offsets(self) -> None:
        """Keep how far each copy got, when that changed (atomically)."""
        now = self._record()
        if now == self._saved:
            return
        partial = self.folder / (OFFSETS + ".partial")
        try:
            partial.write_text(json.dumps(now, sort_keys=True))
            os.replace(partial, self.folder / OFFSETS)
        except OSError as err:
            logger.warning("cannot keep the log copies' offsets: %s", err)
            if self._on_full is not None and is_disk_full(err):
                self._on_full(self.folder / OFFSETS, err)
            return
        self._saved = now

    def start(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        self._thread.start()

    def stop(self, last_copy: bool = True) -> None:
        """Stop following and copy what every task wrote since the last poll.

        Args:
            last_copy: False: stop at once, without waiting for the poll under way or copying
                again (a job left interrupted, whose agents may not answer: a frozen one holds
                each request for its whole timeout). Its tasks run on, and the framework that
                resumes the job copies on from the recorded offsets.
        """
        self._stop.set()
        if not last_copy:
            return  # the thread (a daemon) ends after the request it waits for
        if self._thread.is_alive():
            self._thread.join(10)
        self.poll()
        self._logs.close()  # its kept connections (a later read opens one again)

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                self.poll()
            except Exception:  # noqa: BLE001 - the collector must outlive one bad poll
                logger.exception("log collection failed; trying again")

    def poll(self) -> None:
        """Copy what is new of each task not yet done.

        An agent's ``/state`` is read at most once per poll, and only when a task on it has no
        known sandbox yet: on a cluster shared by many jobs it lists every executor of every
        framework, so reading it once per task made a job's polls, and its last one, grow with
        the whole cluster's history. A task that ended and that its agent does not list (it
        never started, or the agent forgot it) has nothing to copy, and is done."""
        with self._poll_lock:
            framework_id = self._framework_id()
            if not framework_id:
                return
            executors: dict[str, dict[str, tuple[str, str]] | None] = {}
            for task_id, agent_id, live in self._tasks():
                if task_id in self._done:
                    continue
                copied = self._copy_task(framework_id, task_id, agent_id, live, executors)
                if copied and not live:
                    self._done.add(task_id)  # its last output is in; sandboxes stay put
                    self._finished.append(task_id)
            if self.folder.is_dir():
                self._append_done()
                self._save_offsets()

    def _locate(self, framework_id: str, task_id: str, agent_id: str, live: bool,
                executors: dict[str, dict[str, tuple[str, str]] | None]) -> tuple[str, str]:
        """The task's (files base URL, sandbox directory), ("", "") when not (yet) known;
        ``executors`` caches each agent's executors for this poll (None: it did not answer)."""
        if task_id in self._sandboxes:
            return self._sandboxes[task_id]
        if agent_id not in executors:
            try:
                executors[agent_id] = self._logs.executor_sandboxes(agent_id, framework_id)
            except Exception as err:  # noqa: BLE001 - an agent that is gone or not ready
                logger.debug("cannot read the state of agent %s: %s", agent_id, err)
                executors[agent_id] = None
        listed = executors[agent_id]
        if listed is None:
            return "", ""
        found = task_sandbox_in(listed, task_id, self._slot_of(task_id))
        if found[1]:
            self._sandboxes[task_id] = found
        elif not live and listed:
            self._done.add(task_id)  # ended, and its agent knows no sandbox of it
        return found

    def _copy_task(self, framework_id: str, task_id: str, agent_id: str, live: bool,
                   executors: dict[str, dict[str, tuple[str, str]] | None]) -> bool:
        """Copy both streams of a task; False when its sandbox cannot be read (yet)."""
        root, directory = self._locate(framework_id, task_id, agent_id, live, executors)
        if not directory:
            return False
        try:
            listing = self._list(root, directory)
            for stream in STREAMS:
                self._copy_stream(root, f"{directory}/{stream}", task_id, stream, listing)
        except Exception as err:  # noqa: BLE001 - best effort; the next poll resumes
            logger.debug("cannot copy the output of %s: %s", task_id, err)
            if self._on_full is not None and is_disk_full(err):
                self._on_full(self.path(task_id, "stdout").parent, err)
            return False
        return True

    def _list(self, root: str, directory: str) -> Listing:
        """The files of a task's folder and their sizes (one ``/files/browse``)."""
        entries = self._logs.get_json(f"{root}/files/browse?" + urlencode({"path": directory}))
        return {str(entry["path"]).rsplit("/", 1)[-1]: int(entry["size"])
                for entry in entries if isinstance(entry, dict) and "path" in entry}

    def _read(self, root: str, path: str, offset: int, length: int | None = None) -> Any:
        query: dict[str, Any] = {"path": path, "offset": offset}
        if length is not None:
            query["length"] = length
        return self._logs.get_json(f"{root}/files/read?" + urlencode(query))

    def _copy_stream(self, root: str, path: str, task_id: str, stream: str,
                     listing: Listing) -> None:
        key = (task_id, stream)
        offset = self._offsets.get(key, 0)
        if stream not in listing:  # not there yet: this poll fails for the task, the next tries
            raise FileNotFoundError(f"{path} is not in its folder's listing")
        size = listing[stream]
        rotated_size = listing.get(f"{stream}.1", -1)
        target = self.path(task_id, stream)
        if key in self._offsets:
            target.touch()  # an empty stream is still a stream the task had
        else:
            # Nothing of this copy is recorded: what is in it, a framework appended before it
            # died and before its first record. It is copied again from the sandbox.
            target.write_bytes(b"")
            self._removed.pop(key, None)
        notes = []
        earlier = b""
        known = key in self._offsets
        rotated = known and (size < offset or (size > offset and self._replaced(
            root, path, key, offset, rotated_size)))
        if rotated or not known:
            # The agent rotated the file (Mesos' logrotate logger): what was written before
            # it is in `<stream>.1`; the part not copied yet is its tail.
            earlier = self._rotated_tail(root, path, offset if rotated else 0, key,
                                         rotated_size)
            if rotated:
                notes.append(f"[disauto: the sandbox's {stream} was rotated; output written "
                             "around the rotation may be missing here]")
            offset = 0
            self._tails.pop(key, None)
        if earlier:
            with target.open("ab") as out:
                out.write(earlier)
        if size <= offset:
            self._offsets[key] = offset
            self._trim(target, key)
            return
        # Room is left for the notes, so that the copy's trim keeps them with the tail.
        start = max(offset, size - self._max, size - self._cap + min(_NOTES_ROOM, self._cap // 4))
        if start > offset:
            notes.append(f"[disauto: {start - offset} bytes skipped]")
        data = self._read_range(root, path, start, size)
        with target.open("ab") as out:
            if notes:
                out.write(("\n" + "\n".join(notes) + "\n").encode())
            out.write(data)
        before = self._tails.get(key, b"") if start == offset else b""
        self._tails[key] = (before + data)[-FINGERPRINT:]
        self._offsets[key] = size
        self._trim(target, key)

    def _replaced(self, root: str, path: str, key: tuple[str, str], offset: int,
                  rotated_size: int) -> bool:
        """Whether the sandbox file that grew past ``offset`` is no longer the one copied up to
        there: rotated (its bytes before ``offset`` are not those copied), or, when nothing of
        it was copied yet, a ``<stream>.1`` that was not there, or not that size, before."""
        if offset == 0:
            seen = self._rotated_sizes.get(key)
            return seen is not None and rotated_size != seen
        copied = self._tails.get(key)
        if not copied:
            return False  # not known (a resumed framework): only a shrunk file says so
        now = self._read_range(root, path, max(0, offset - FINGERPRINT), offset)
        # The last bytes only: a read that begins inside a UTF-8 character decodes it
        # differently from the copy, which read it whole.
        last = min(len(copied), FINGERPRINT // 2)
        return now[-last:] != copied[-last:]

    def _read_range(self, root: str, path: str, start: int, end: int) -> bytes:
        """Bytes ``start..end`` of a sandbox file, in reads no larger than an agent answers.

        Below the size read before, the agent returns exactly the ``length`` asked when it is
        at most its cap (16 pages), so the offset advances by what was asked, not by the
        decoded text's length.
        """
        parts = []
        while start < end:
            length = min(READ_CHUNK, end - start)
            data = str(self._read(root, path, start, length)["data"])
            parts.append(data.encode("utf-8", "replace"))
            start += length
        return b"".join(parts)

    def _rotated_tail(self, root: str, path: str, start: int, key: tuple[str, str],
                      size: int) -> bytes:
        """The bytes of the rotated ``path.1`` (``size`` bytes; -1: the agent has no such
        file) from ``start``, at most the copy's cap; its size is kept to tell the next
        rotation by."""
        self._rotated_sizes[key] = size
        start = max(start, size - self._cap)
        if start >= size:
            return b""
        return self._read_range(root, f"{path}.1", start, size)

    def _trim(self, target: Path, key: tuple[str, str]) -> None:
        """Keep the copy within ``max_task_log_bytes``: cut its beginning at a line boundary
        and say on its first line how many bytes were removed in all."""
        if target.stat().st_size <= self._cap:
            return
        body = target.read_bytes()
        if key in self._removed and body.startswith(HEADER):
            body = body[body.find(b"\n") + 1:]  # the previous header
        cut = len(body) - self._cap
        newline = body.find(b"\n", cut)
        cut = newline + 1 if 0 <= newline < cut + 4096 else cut
        self._removed[key] = self._removed.get(key, 0) + cut
        header = (HEADER + f"the first {self._removed[key]} bytes of this copy were removed: "
                  f"the job folder keeps the last {self._cap} bytes of each stream; the "
                  "agent's sandbox may hold more]\n".encode())
        partial = target.with_name(target.name + ".partial")
        partial.write_bytes(header + body[cut:])
        os.replace(partial, target)
