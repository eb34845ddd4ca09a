"""The registry of collectors and processors, and how one of them runs.

An **entry** has a name, a kind and an interval:

* a *collector* produces samples: a command run on the framework's host, which prints sample
  lines (``lines.py``), or a built-in Python callable (``BuiltinCollector``, passed to the
  registry by the framework: the agents' ``/monitor/statistics`` poller);
* a *processor* derives samples from samples: it takes the samples of its ``inputs`` (data
  names) recorded since its last run, on its stdin as sample lines for a command, as a list for
  a built-in callable (``BuiltinProcessor``; ``processors.py`` holds ours), and returns new
  samples.

Whatever an entry produces is stored in the job store (``JobStore.add_samples``). A run that
fails (a bad line, a non-zero exit, a timeout, an exception) is recorded in the entry's status
as one line; it never stops the other entries. Entries added through the data service are
kept in the job's record (meta ``telemetry_registry``), so ``da-job resume`` has them again;
built-ins come from the framework each time (a changed interval of one is kept too). The
status of every entry and each processor's cursor are kept in meta ``telemetry_status``, which
``da-job ui`` reads to show the registry of a job it serves from the record.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import asdict
from dataclasses import dataclass
from dataclasses import field
from dataclasses import replace
import json
import logging
import math
import os
from pathlib import Path
import signal
import subprocess
import threading
import time
from typing import Any

from disauto.common.telemetry import Sample
from disauto.framework import _meta as meta
from disauto.framework._errors import AlreadyExistsError
from disauto.framework._errors import FailedPreconditionError
from disauto.framework._errors import InvalidArgumentError
from disauto.framework._errors import NotFoundError
from disauto.framework._store import JobStore
from disauto.framework._telemetry.lines import NAME
from disauto.framework._telemetry.lines import format_lines
from disauto.framework._telemetry.lines import parse_lines


logger = logging.getLogger(__name__)

REGISTRY_KEY = meta.TELEMETRY_REGISTRY
"""Meta key: the registry's entries (JSON), built-ins flagged."""
STATUS_KEY = meta.TELEMETRY_STATUS
"""Meta key: each entry's status and each processor's cursor (JSON)."""

COLLECTOR = "collector"
PROCESSOR = "processor"
KINDS = (COLLECTOR, PROCESSOR)
MIN_INTERVAL = 0.2
MAX_INTERVAL = 86_400.0
DEFAULT_TIMEOUT = 10.0
MAX_TIMEOUT = 600.0
MAX_OUTPUT_LINES = 100_000
MAX_INPUTS = 32
FIELDS = ("name", "kind", "command", "interval", "timeout", "inputs")
"""The fields of an entry as the data service takes it."""

Collect = Callable[[], Sequence[Sample]]
Process = Callable[[Sequence[Sample]], Sequence[Sample]]


@dataclass(frozen=True)
class BuiltinCollector:
    """A collector of the framework's own: ``collect()`` returns the samples it measured."""

    name: str
    interval: float
    collect: Collect
    timeout: float = DEFAULT_TIMEOUT
    """How long a run may take before it is reported slow (a callable cannot be killed)."""


@dataclass(frozen=True)
class BuiltinProcessor:
    """A processor of the framework's own: ``process(samples)`` gets the samples of
    ``inputs`` recorded since its last run (in the order recorded) and returns new ones."""

    name: str
    interval: float
    inputs: tuple[str, ...]
    process: Process
    timeout: float = DEFAULT_TIMEOUT


@dataclass(frozen=True)
class Entry:
    """A collector or processor as the registry lists it."""

    name: str
    kind: str
    interval: float
    timeout: float = DEFAULT_TIMEOUT
    command: str = ""
    """The shell command (entries added by the user); "" for a built-in."""
    inputs: tuple[str, ...] = ()
    """The data names a processor reads."""
    builtin: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.kind, "interval": self.interval,
                "timeout": self.timeout, "command": self.command, "inputs": list(self.inputs),
                "builtin": self.builtin}


@dataclass
class Status:
    """What an entry's runs came to."""

    runs: int = 0
    failures: int = 0
    last_run: float | None = None
    """When the last run started (Unix seconds)."""
    last_seconds: float | None = None
    last_samples: int = 0
    """How many samples the last run stored."""
    last_error: str = ""
    """Why the last run failed, or its bad lines (one line); "" when it went well."""
    running_since: float | None = None
    cursor: int = 0
    """A processor's position in the telemetry table (the last sample row it read)."""
    next_due: float = field(default=0.0, repr=False)


def _check_name(name: Any, what: str = "name") -> str:
    if not isinstance(name, str) or not NAME.fullmatch(name):
        raise InvalidArgumentError(
            f"bad {what} {name!r}: 1-64 of letters, digits, _ . : -")
    return name


def _check_seconds(value: Any, what: str, low: float, high: float) -> float:
    if not isinstance(value, int | float) or isinstance(value, bool) \
            or not math.isfinite(value) or not low <= value <= high:
        raise InvalidArgumentError(f"bad {what} {value!r}: seconds from {low:g} to {high:g}")
    return float(value)


def _check_inputs(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not value or len(value) > MAX_INPUTS:
        raise InvalidArgumentError(
            f"bad inputs {value!r}: a processor reads a list of 1 to {MAX_INPUTS} data names")
    return tuple(_check_name(name, "input data name") for name in value)


def entry_from_json(body: Mapping[str, Any], base: Entry | None = None) -> Entry:
    """An entry from the data service's JSON (``base``: the entry a PUT changes).

    Raises:
        InvalidArgumentError: a field is missing, unknown or invalid (the message says which
            and what is valid).
    """
    unknown = sorted(set(body) - set(FIELDS) - {"builtin"})
    if unknown:
        raise InvalidArgumentError(f"unknown field {', '.join(unknown)} "
                                   f"(valid: {', '.join(FIELDS)})")
    if base is None:
        missing = [key for key in ("name", "kind", "command", "interval") if key not in body]
        if missing:
            raise InvalidArgumentError(f"missing {', '.join(missing)} (an entry needs name, "
                                       "kind, command and interval; timeout and, for a "
                                       "processor, inputs)")
        name = _check_name(body["name"])
        kind = body["kind"]
        if kind not in KINDS:
            raise InvalidArgumentError(f"bad kind {kind!r}: collector or processor")
    else:
        for key in ("name", "kind", "builtin"):
            if key in body and body[key] != getattr(base, key):
                raise InvalidArgumentError(f"the {key} of {base.name!r} cannot change "
                                           "(delete it and add another)")
        name, kind = base.name, base.kind
        if base.builtin and set(body) - {"name", "kind", "builtin", "interval"}:
            raise InvalidArgumentError(f"{name!r} is built in: only its interval can change")
    command = body.get("command", base.command if base else "")
    if not (base is not None and base.builtin) and (
            not isinstance(command, str) or not command.strip()):
        raise InvalidArgumentError(f"bad command {command!r}: a non-empty shell command")
    interval = _check_seconds(body.get("interval", base.interval if base else 0.0),
                              "interval", MIN_INTERVAL, MAX_INTERVAL)
    timeout = _check_seconds(body.get("timeout", base.timeout if base else DEFAULT_TIMEOUT),
                             "timeout", 0.1, MAX_TIMEOUT)
    inputs: tuple[str, ...] = ()
    if kind == PROCESSOR:
        raw = body.get("inputs", list(base.inputs) if base else None)
        if raw is None:
            raise InvalidArgumentError("missing inputs: a processor reads a list of data "
                                       "names (e.g. [\"mem_rss_bytes\"])")
        inputs = _check_inputs(raw)
    elif body.get("inputs"):
        raise InvalidArgumentError("a collector has no inputs (only a processor reads data)")
    return Entry(name=name, kind=kind, interval=interval, timeout=timeout, command=command,
                 inputs=inputs, builtin=base.builtin if base else False)


class TelemetryRegistry:
    """The job's collectors and processors, their status, and running one of them.

    Thread safety: every method may be called from any thread (the scheduler's, its runs',
    the page server's).

    Args:
        store: the job store (samples go there; the registry is kept in its meta).
        collectors: the framework's built-in collectors.
        processors: the framework's built-in processors.
        workdir: where commands run (the job folder).
    """

    def __init__(self, store: JobStore, collectors: Sequence[BuiltinCollector] = (),
                 processors: Sequence[BuiltinProcessor] = (), *,
                 workdir: Path | None = None) -> None:
        self._store = store
        self._workdir = workdir
        self._lock = threading.RLock()
        self._entries: dict[str, Entry] = {}
        self._functions: dict[str, Callable[..., Sequence[Sample]]] = {}
        self._status: dict[str, Status] = {}
        self._processes: dict[str, subprocess.Popen[bytes]] = {}
        for collector in collectors:
            self._add_builtin(Entry(collector.name, COLLECTOR, collector.interval,
                                    collector.timeout, builtin=True), collector.collect)
        for processor in processors:
            self._add_builtin(Entry(processor.name, PROCESSOR, processor.interval,
                                    processor.timeout, inputs=tuple(processor.inputs),
                                    builtin=True), processor.process)
        self._load()

    def _add_builtin(self, entry: Entry, function: Callable[..., Sequence[Sample]]) -> None:
        _check_name(entry.name)
        if entry.name in self._entries:
            raise ValueError(f"two built-in telemetry entries are named {entry.name!r}")
        self._entries[entry.name] = entry
        self._functions[entry.name] = function
        self._status[entry.name] = Status()

    # -- persistence ---------------------------------------------------------------------

    def _load(self) -> None:
        """Take back the entries (and statuses, cursors) a previous run of the job kept."""
        try:
            kept = json.loads(self._store.get_meta(REGISTRY_KEY) or "[]")
            statuses = json.loads(self._store.get_meta(STATUS_KEY) or "{}")
        except ValueError as err:
            logger.warning("the job's telemetry registry is unreadable (%s): starting afresh",
                           err)
            return
        for data in kept if isinstance(kept, list) else []:
            try:
                if data.get("builtin"):
                    base = self._entries.get(str(data.get("name")))
                    if base is not None:
                        self._entries[base.name] = entry_from_json(
                            {"interval": data["interval"]}, base)
                    continue
                entry = entry_from_json({k: v for k, v in data.items() if k in FIELDS})
            except (InvalidArgumentError, KeyError, AttributeError) as err:
                logger.warning("dropping a kept telemetry entry %r: %s", data, err)
                continue
            if entry.name in self._entries:
                logger.warning("dropping the kept telemetry entry %r: a built-in has its name",
                               entry.name)
                continue
            self._entries[entry.name] = entry
            self._status[entry.name] = Status()
        for name, data in statuses.items() if isinstance(statuses, dict) else []:
            if name in self._status and isinstance(data, dict):
                self._status[name].cursor = int(data.get("cursor") or 0)
                self._status[name].runs = int(data.get("runs") or 0)
                self._status[name].failures = int(data.get("failures") or 0)
        self._save()

    def _save(self) -> None:
        with self._lock:
            entries = [entry.to_json() for entry in self._entries.values()]
        self._store.set_meta(REGISTRY_KEY, json.dumps(entries, sort_keys=True))
        self._save_status()

    def _save_status(self) -> None:
        with self._lock:
            statuses = {name: _status_json(status) for name, status in self._status.items()}
        self._store.set_meta(STATUS_KEY, json.dumps(statuses, sort_keys=True))

    # -- the entries -------------------------------------------------------------------------

    def entries(self) -> list[Entry]:
        with self._lock:
            return list(self._entries.values())

    def get(self, name: str) -> Entry:
        """Raises: NotFoundError: no such entry (the message names those there are)."""
        with self._lock:
            entry = self._entries.get(name)
            if entry is None:
                raise NotFoundError(f"no collector or processor named {name!r} "
                                    f"(there are: {', '.join(self._entries) or 'none'})")
            return entry

    def status(self, name: str) -> Status:
        with self._lock:
            self.get(name)
            return replace(self._status[name])

    def describe(self) -> list[dict[str, Any]]:
        """Every entry with its status (the data service's ``GET /api/registry``)."""
        with self._lock:
            return [{**entry.to_json(), "status": _status_json(self._status[entry.name])}
                    for entry in self._entries.values()]

    def add(self, body: Mapping[str, Any]) -> Entry:
        """Add a command collector or processor.

        Raises:
            InvalidArgumentError: the body is not a valid entry.
            AlreadyExistsError: an entry of that name exists.
        """
        entry = entry_from_json(body)
        with self._lock:
            if entry.name in self._entries:
                what = "a built-in" if self._entries[entry.name].builtin else "an entry"
                raise AlreadyExistsError(f"{what} named {entry.name!r} exists already "
                                         f"(PUT /api/registry/{entry.name} changes it)")
            self._entries[entry.name] = entry
            self._status[entry.name] = Status()
        self._save()
        return entry

    def update(self, name: str, body: Mapping[str, Any]) -> Entry:
        """Change an entry's command, interval, timeout or inputs (a built-in's interval).

        Raises:
            NotFoundError: no such entry.
            InvalidArgumentError: the change is not valid.
        """
        with self._lock:
            entry = entry_from_json(body, self.get(name))
            self._entries[name] = entry
            status = self._status[name]
            status.next_due = min(status.next_due, time.time() + entry.interval)
        self._save()
        return entry

    def remove(self, name: str) -> None:
        """Raises: NotFoundError: no such entry. FailedPreconditionError: it is built in."""
        with self._lock:
            if self.get(name).builtin:
                raise FailedPreconditionError(
                    f"{name!r} is built in and cannot be deleted (PUT can change its interval)")
            del self._entries[name]
            del self._status[name]
            process = self._processes.pop(name, None)
        if process is not None:
            _kill_group(process)
        self._save()

    # -- running -----------------------------------------------------------------------------

    def due(self, now: float) -> list[str]:
        """The entries whose interval has passed since their last run and that are not running;
        a run past its timeout is reported (once) as slow."""
        names: list[str] = []
        with self._lock:
            for name, entry in self._entries.items():
                status = self._status[name]
                if status.running_since is not None:
                    late = now - status.running_since
                    if late > entry.timeout and not status.last_error.startswith("slow"):
                        status.last_error = (f"slow: still running after {late:.1f} s "
                                             f"(timeout {entry.timeout:g} s)")
                        logger.warning("telemetry %s %s", name, status.last_error)
                elif now >= status.next_due:
                    names.append(name)
        return names

    def launch(self, name: str) -> threading.Thread | None:
        """Run ``name`` on a thread of its own (None: it is running already)."""
        with self._lock:
            status = self._status.get(name)
            if status is None or status.running_since is not None:
                return None
            status.running_since = time.time()
        thread = threading.Thread(target=self._run_started, args=(name,),
                                  name=f"disauto-telemetry-{name}", daemon=True)
        thread.start()
        return thread

    def run(self, name: str) -> Status:
        """Run ``name`` now, in this thread, and store what it produced; its status after.

        Raises:
            NotFoundError: no such entry.
            FailedPreconditionError: it is running already.
        """
        with self._lock:
            self.get(name)
            status = self._status[name]
            if status.running_since is not None:
                raise FailedPreconditionError(f"{name!r} is running already")
            status.running_since = time.time()
        self._run_started(name)
        return self.status(name)

    def _run_started(self, name: str) -> None:
        with self._lock:
            entry = self._entries.get(name)
            status = self._status.get(name)
            if entry is None or status is None:
                return
            started = status.running_since or time.time()
            cursor = status.cursor
        produced: list[Sample] = []
        errors: list[str] = []
        try:
            inputs: list[Sample] = []
            if entry.kind == PROCESSOR:
                inputs, cursor = self._store.samples_after(status.cursor, entry.inputs)
            if entry.kind == PROCESSOR and not inputs:
                pass  # nothing new to derive from
            elif entry.builtin:
                function = self._functions[name]
                produced = list(function(inputs) if entry.kind == PROCESSOR else function())
            else:
                produced, errors = self._run_command(entry, inputs, started)
            if entry.kind == PROCESSOR:
                kept = [s for s in produced if s.data_name not in entry.inputs]
                if len(kept) < len(produced):
                    errors.append("a processor's output cannot be one of its inputs "
                                  f"({', '.join(entry.inputs)}): dropped")
                produced = kept
            self._store.add_samples(produced)
        except Exception as err:  # noqa: BLE001 - one entry's failure is its status, no more
            errors.append(f"{type(err).__name__}: {err}")
            produced = []
            if entry.kind == PROCESSOR:
                cursor = status.cursor  # read them again next time
        ended = time.time()
        with self._lock:
            status = self._status.get(name)
            if status is None:  # deleted meanwhile
                return
            status.runs += 1
            status.last_run = started
            status.last_seconds = round(ended - started, 3)
            status.last_samples = len(produced)
            status.cursor = cursor
            status.running_since = None
            status.next_due = started + self._entries[name].interval \
                if name in self._entries else ended
            if errors:
                status.failures += 1
                more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
                status.last_error = (errors[0] + more).splitlines()[0]
                logger.info("telemetry %s: %s", name, status.last_error)
            else:
                status.last_error = ""
        self._save_status()

    def _run_command(self, entry: Entry, inputs: Sequence[Sample],
                     now: float) -> tuple[list[Sample], list[str]]:
        """Run a command entry: its samples and errors (bad lines, exit status, timeout)."""
        process = subprocess.Popen(
            entry.command, shell=True, cwd=self._workdir, start_new_session=True,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        with self._lock:
            self._processes[entry.name] = process
        errors: list[str] = []
        timed_out = False
        try:
            out, err = process.communicate(format_lines(inputs).encode(), timeout=entry.timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill_group(process)
            out, err = process.communicate()
            errors.append(f"timed out after {entry.timeout:g} s (killed); what it printed "
                          "before is kept")
        finally:
            with self._lock:
                if self._processes.get(entry.name) is process:
                    del self._processes[entry.name]
        lines = out.decode("utf-8", "replace").splitlines()
        if len(lines) > MAX_OUTPUT_LINES:
            errors.append(f"printed {len(lines)} lines: only the first {MAX_OUTPUT_LINES} "
                          "are read")
            lines = lines[:MAX_OUTPUT_LINES]
        samples, bad = parse_lines(lines, now)
        errors.extend(bad)
        if not timed_out and process.returncode != 0:
            why = err.decode("utf-8", "replace").strip().splitlines()
            errors.insert(0, f"exited with status {process.returncode}"
                             + (f": {why[-1]}" if why else ""))
        return samples, errors

    def stop(self) -> None:
        """Kill the commands that are running (the job ends)."""
        with self._lock:
            running = list(self._processes.values())
            self._processes.clear()
        for process in running:
            _kill_group(process)


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    """Kill a command and whatever it started (its own session: start_new_session)."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _status_json(status: Status) -> dict[str, Any]:
    data = asdict(status)
    data.pop("next_due")
    return data


def recorded_registry(store: JobStore) -> list[dict[str, Any]]:
    """The registry as the job's record keeps it, each entry with its last status (what
    ``da-job ui`` shows of a job it serves from the record)."""
    try:
        entries = json.loads(store.get_meta(REGISTRY_KEY) or "[]")
        statuses = json.loads(store.get_meta(STATUS_KEY) or "{}")
    except ValueError:
        return []
    if not isinstance(entries, list) or not isinstance(statuses, dict):
        return []
    return [{**entry, "status": statuses.get(entry.get("name"))}
            for entry in entries if isinstance(entry, dict)]
