"""Every key of a job record's ``meta`` table, with its type: the one module that names them.

The record keeps each value as text (``meta(key TEXT, value TEXT)``, ``framework/_store.py``),
the format other versions of DisAuto and the tests read. A :class:`MetaKey` says how its value
reads and writes, and every reader and writer goes through one (``JobStore.get_meta(KEY)``,
``set_meta(KEY, value)``, ``set_meta_many({KEY: value})``, a :class:`JobMeta` read at once):
no other module spells a key (``tests/test_architecture.py`` checks it).

Reading never fails on a value another version wrote badly or left out: it reads as the key's
default. The job's configuration is the exception: without it (or with a garbled one) nothing
of the job can be shown, so its parse error reaches the caller, who says so in one line.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Iterator
from collections.abc import Mapping
from copy import copy
from dataclasses import dataclass
import json
from typing import Any
from typing import Generic
from typing import TypeVar

from disauto.framework._spec import JobConfig


T = TypeVar("T")

RUNNING = "RUNNING"
"""``STATE`` while a framework runs the job (or was running it when it died)."""
ENDED = "ENDED"
"""``STATE`` once the job ended and its record is closed."""


@dataclass(frozen=True, eq=False)
class MetaKey(Generic[T]):
    """One meta key: its name in the record, how its text reads and writes, its default.

    Keys compare and hash by identity: each is declared once, here."""

    name: str
    parse: Callable[[str], T]
    format: Callable[[T], str]
    default: T
    doc: str
    strict: bool = False
    """A parse error reaches the caller (the configuration) instead of reading the default."""

    def read(self, text: str | None) -> T:
        """The value of the recorded ``text`` (None: not recorded)."""
        if text is None or text == "":
            return copy(self.default)  # a caller may change a dict it reads
        if self.strict:
            return self.parse(text)
        try:
            return self.parse(text)
        except (ValueError, TypeError):
            return copy(self.default)

    def text(self, value: T) -> str:
        """What the record keeps of ``value``."""
        return self.format(value)


@dataclass(frozen=True, eq=False)
class MetaFamily(Generic[T]):
    """Keys that share a prefix, one per thing (a warm slot's ExecutorInfo per executor)."""

    prefix: str
    parse: Callable[[str], T]
    format: Callable[[T], str]
    default: T
    doc: str

    def key(self, suffix: str) -> MetaKey[T]:
        return MetaKey(self.prefix + suffix, self.parse, self.format, self.default, self.doc)


# -- how values read and write -------------------------------------------------------------------


def _text(value: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"expected text, got {type(value).__name__}")
    return value


def _int_text(value: int) -> str:
    return str(int(value))


def _float_text(value: float | None) -> str:
    return "" if value is None else str(float(value))


def _flag(text: str) -> bool:
    return text == "1"


def _flag_text(value: bool) -> str:
    return "1" if value else ""


def _json_object(text: str) -> dict[str, Any]:
    data = json.loads(text)
    if not isinstance(data, dict):
        raise ValueError("not a JSON object")
    return data


def _json_text(value: Mapping[str, Any] | None) -> str:
    return "" if value is None else json.dumps(dict(value), sort_keys=True)


def _endpoints(text: str) -> dict[str, str]:
    return {str(agent): str(url) for agent, url in _json_object(text).items()}


def _counts(text: str) -> dict[str, float]:
    return {str(name): float(value) for name, value in _json_object(text).items()}


def _config_text(value: JobConfig | None) -> str:
    return "" if value is None else value.to_json()


def _text_key(name: str, doc: str, default: str = "") -> MetaKey[str]:
    return MetaKey(name, str, _text, default, doc)


def _int_key(name: str, doc: str, default: int = 0) -> MetaKey[int]:
    return MetaKey(name, int, _int_text, default, doc)


def _time_key(name: str, doc: str) -> MetaKey[float | None]:
    return MetaKey(name, float, _float_text, None, doc)


def _flag_key(name: str, doc: str) -> MetaKey[bool]:
    return MetaKey(name, _flag, _flag_text, False, doc)


# -- the keys ------------------------------------------------------------------------------------

SCHEMA_VERSION = _int_key("schema_version", "The record's schema (framework/_store.py).")

# What the job is.
JOB_ID = _text_key("job_id", "The job's id (its folder's name).")
CONFIG: MetaKey[JobConfig | None] = MetaKey(
    "config", JobConfig.from_json, _config_text, None,
    "The job's configuration; da-job update changes its search spec.", strict=True)
OFFER_POLICY = _text_key("offer_policy", "The offer policy's name.", default="fifo")

# Where and how it runs (written by the framework that runs it; da-job resume reads them).
MASTER = _text_key("master", "The master the framework subscribed to (host:port or zk://).")
SUBMITTED_MASTER = _text_key("submitted_master", "--master as given (local: the embedded one).")
LOCAL_AGENTS = _int_key("local_agents", "--local-agents of a --master local job.", default=1)
PRINCIPAL = _text_key("principal", "--principal (its secret is never recorded).")
AGENT_PRINCIPAL = _text_key(
    "agent_principal", "The principal the agents' HTTP endpoints are read as (--agent-principal,"
    " by default --principal); its secret is never recorded.")
ADVERTISE_HOST = _text_key("advertise_host", "--advertise-host as given.")
BIND_ALL = _flag_key("bind_all", "Whether --bind-all was given.")
BIND_HOST = _text_key("bind_host", "Where the framework's servers listen.")
PID = _int_key("pid", "The process that runs the job's framework.")
PID_START = _text_key("pid_start", "That process's start time (a reused pid is not it).")
HOST = _text_key("host", "The host that process runs on.")
GRPC_PORT = _int_key("grpc_port", "The framework's gRPC port (a resume takes it again).")
FILES_PORT = _int_key("files_port", "The file server's port.")
WEBUI_PORT = _int_key("webui_port", "The job page's port.")
WEBUI_URL = _text_key("webui_url", "The job page's URL (FrameworkInfo.webui_url).")
TLS_FINGERPRINT = _text_key("tls_fingerprint", "SHA-256 of the framework's certificate.")
FRAMEWORK_ID = _text_key("framework_id", "The FrameworkID the master gave.")
FRAMEWORK_CHECKPOINT = _flag_key(
    "framework_checkpoint", "Whether the framework of FRAMEWORK_ID was registered with "
    "FrameworkInfo.checkpoint (Mesos never changes it for an existing framework).")
FRAMEWORK_REGISTERED = _flag_key(
    "framework_registered", "Set once the master registered the framework (da-submit --detach "
    "waits for it).")
AGENT_ENDPOINTS: MetaKey[dict[str, str]] = MetaKey(
    "agent_endpoints", _endpoints, _json_text, {},
    "Agent id → its HTTP endpoint, learnt from offers (da-job logs of an interrupted job).")
SLOTS_STARTED = _int_key("slots_started", "Warm slots the job started, across its frameworks.")
SLOT_EXECUTOR: MetaFamily[dict[str, Any] | None] = MetaFamily(
    "slot_executor:", _json_object, _json_text, None,
    "A warm slot's ExecutorInfo (JSON), by executor id: a resumed framework adopts the slot "
    "with exactly it.")

# How it went.
STATE = _text_key("state", f"{RUNNING} or {ENDED} (da-job judges running from the process).")
STARTED_AT = _time_key("started_at", "When the job started (seconds since the epoch).")
RESUMED_AT = _time_key("resumed_at", "When a framework last resumed it.")
ENDED_AT = _time_key("ended_at", "When it ended.")
OUTCOME = _text_key("outcome", "The JobOutcome's name once it ended.")
OUTCOME_MESSAGE = _text_key("outcome_message", "Why it ended, in one line.")
TORN_DOWN = _flag_key(
    "torn_down", "Set once the ended job's framework is torn down (the master removed it): a "
    "framework that dies before it closes the record leaves a job da-job resume finishes "
    "without a master.")
INTERRUPTED_REASON = _text_key(
    "interrupted_reason", "Why the framework gave up without ending the job (da-job resume).")
BEST_OUTPUT = _text_key("best_output", "Where the best trial's --output was copied.")
OFFER_COUNTS: MetaKey[dict[str, float]] = MetaKey(
    "offer_counts", _counts, _json_text, {},
    "The offer policy's counters (offers seen, declined, ...) at the end.")

# Telemetry (JSON that framework/_telemetry/registry.py reads, saying when it cannot).
TELEMETRY_REGISTRY = _text_key("telemetry_registry", "The registry's entries (JSON).")
TELEMETRY_STATUS = _text_key("telemetry_status", "Each entry's status, each cursor (JSON).")

# Keys of the record's earlier control requests, replaced by its control table
# (framework/control.py). Nothing reads or writes them now: a record that has them stays
# readable, and its old requests are not acted on.
LEGACY_CONTROL = _text_key("control", "Before the control table: 'kill' from da-job kill.")
LEGACY_KILL_TRIALS = _text_key("kill_trials", "Before it: trials the job page asked to kill.")
LEGACY_UPDATE_REQUEST = _text_key("update_request", "Before it: da-job update's request.")
LEGACY_UPDATE_RESULT = _text_key("update_result", "Before it: the framework's answer.")

KEYS: tuple[MetaKey[Any], ...] = tuple(
    value for value in globals().values() if isinstance(value, MetaKey))
"""Every key (the families' keys aside)."""


class JobMeta:
    """A record's meta as read at one moment.

    ``meta[KEY]`` is the typed value of a :class:`MetaKey`. Its text is not read by name: a
    reader asks for a key declared here (``tests/test_architecture.py`` holds the packages to
    it), so a key's name, type and default live in one place.
    """

    def __init__(self, text: Mapping[str, str] | None = None) -> None:
        self._text = dict(text or {})

    def __getitem__(self, key: MetaKey[T]) -> T:
        if not isinstance(key, MetaKey):
            raise TypeError(f"a record's meta is read by its keys (framework/_meta.py), not by "
                            f"{key!r}")
        return key.read(self._text.get(key.name))

    def __contains__(self, key: object) -> bool:
        raise TypeError("ask has(KEY) whether a record holds a meta value")

    def __iter__(self) -> Iterator[str]:
        raise TypeError("a record's meta is read by its keys, not listed")

    def has(self, key: MetaKey[Any]) -> bool:
        """Whether the record holds a value for ``key`` (an empty one counts as none)."""
        return bool(self._text.get(key.name))

    def with_values(self, values: Mapping[MetaKey[Any], Any]) -> JobMeta:
        """A copy that holds ``values`` instead of what was recorded for their keys."""
        return JobMeta({**self._text, **{key.name: key.text(value)
                                         for key, value in values.items()}})
