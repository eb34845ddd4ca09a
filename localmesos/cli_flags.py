"""``da-cluster``'s flags: the parser, the value parsers and the :class:`ClusterConfig` they
make. Every bad value is a :class:`UsageError` whose message names the flag and what is
valid, one line.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from collections.abc import Sequence
from dataclasses import replace
import json
import math
from pathlib import Path
from typing import Any
from typing import NoReturn

from disauto.common import durations
from disauto.common.logrotate import DEFAULT_OPTIONS
from disauto.common.logrotate import LogRotateError
from disauto.common.logrotate import Rotation
from disauto.common.logrotate import SandboxLogging
from disauto.common.logrotate import parse_options
from disauto.common.resources import SIZE_HELP
from disauto.common.resources import ResourceError
from disauto.common.resources import RoleResources
from disauto.common.resources import parse_ranges
from disauto.common.resources import parse_size_mb
from disauto.localmesos.cluster import ClusterConfig
from disauto.localmesos.cluster import parse_isolation
from disauto.localmesos.containerizer import cpu_quota
from disauto.localmesos.master.authorizer import Acls
from disauto.localmesos.master.authorizer import parse_acls


PROG = "da-cluster"


class UsageError(Exception):
    """A flag value that is not valid; the message names the flag."""


# -- value parsers ----------------------------------------------------------------------------

DURATION_HELP = durations.HELP


def parse_duration(text: str, *, flag: str) -> float:
    """Seconds of ``1``, ``1s``, ``500ms``, ``1secs``, ``1.5mins`` (:mod:`common.durations`).

    Raises:
        UsageError: naming ``flag`` and the accepted forms.
    """
    try:
        return durations.parse_duration(text)
    except durations.DurationError as err:
        raise UsageError(f"{flag}: {err}") from None


def parse_attributes(text: str, *, flag: str = "--attributes") -> dict[str, str | float]:
    """Parse Mesos agent attributes ``rack:r1;zone:eu;cores:8`` (text or scalar values).

    Raises:
        UsageError: naming ``flag`` and the expected form.
    """
    attributes: dict[str, str | float] = {}
    for item in filter(None, (part.strip() for part in text.split(";"))):
        name, sep, value = item.partition(":")
        name, value = name.strip(), value.strip()
        if not sep or not name or not value:
            raise UsageError(
                f"{flag}: invalid attribute {item!r}: expected NAME:VALUE pairs separated by "
                "';' (e.g. rack:r1;zone:eu)"
            )
        try:
            number = float(value)
        except ValueError:
            attributes[name] = value
        else:
            attributes[name] = number if math.isfinite(number) else value
    return attributes


def load_credentials(path: str, *, flag: str = "--credentials") -> dict[str, str]:
    """Read a Mesos credentials file: JSON ``{"credentials": [{"principal", "secret"}]}`` or
    one ``principal secret`` pair per line (``file://`` prefixes are accepted).

    Raises:
        UsageError: naming the flag, the file and, for text files, the line at fault.
    """
    if path.startswith("file://"):
        path = path[len("file://"):]
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise UsageError(f"{flag}: cannot read {path}: {reason}") from None
    credentials: dict[str, str] = {}
    if text.lstrip().startswith("{"):
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise UsageError(f"{flag}: {path} is not valid JSON: {exc}") from None
        items = data.get("credentials") if isinstance(data, dict) else None
        if not isinstance(items, list):
            raise UsageError(
                f'{flag}: {path}: expected {{"credentials": [{{"principal": ..., '
                '"secret": ...}]}'
            )
        for index, item in enumerate(items):
            if (
                not isinstance(item, dict)
                or not isinstance(item.get("principal"), str)
                or not isinstance(item.get("secret"), str)
                or not item["principal"]
            ):
                raise UsageError(
                    f"{flag}: {path}: credentials[{index}] needs string 'principal' and "
                    "'secret'"
                )
            credentials[item["principal"]] = item["secret"]
    else:
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            parts = line.split()
            if len(parts) != 2:
                raise UsageError(
                    f"{flag}: {path} line {number}: expected 'principal secret', got {line!r}"
                )
            credentials[parts[0]] = parts[1]
    if not credentials:
        raise UsageError(f"{flag}: {path} holds no credentials")
    return credentials


# -- arguments --------------------------------------------------------------------------------


Group = argparse._ArgumentGroup  # noqa: SLF001 - argparse's type of add_argument_group()


class _Parser(argparse.ArgumentParser):
    """argparse that reports errors as one line and raises instead of exiting."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


USAGE = """da-cluster [options]
       da-cluster --agents-only --master HOST:PORT [options]
       da-cluster --zk zk://HOST:PORT/PATH [--masters N|--master-only] [options]
       da-cluster master list --zk zk://HOST:PORT/PATH
       da-cluster agent {list,restart,partition,heal} [AGENT] --master HOST:PORT"""

ADMIN_HELP = """admin (not Mesos calls; docs/local-mode.md):
  da-cluster agent list --master HOST:PORT
                        the agents of a running da-cluster, partitioned or not
  da-cluster agent restart AGENT --master HOST:PORT [--for DURATION]
                        the agent dies now and comes back (after DURATION)
  da-cluster agent partition AGENT --master HOST:PORT [--for DURATION]
                        cut it off from the master (until healed, or DURATION)
  da-cluster agent heal AGENT --master HOST:PORT
                        end its partition
  Drain agents and schedule maintenance with Mesos' operator API (/api/v1)."""


def build_parser() -> argparse.ArgumentParser:
    """The ``da-cluster`` argument parser: its flags by concern, each with its default."""
    parser = _Parser(
        prog=PROG, usage=USAGE, epilog=ADMIN_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Run an embedded Mesos master with N agents on this machine (local\n"
                    "mode) until Ctrl-C; 'da-cluster agent' acts on one agent of a running one.",
    )
    _add_cluster_flags(parser.add_argument_group("cluster"))
    _add_agent_flags(parser.add_argument_group("agents"))
    _add_resource_flags(parser.add_argument_group("reservations and per-agent settings"))
    _add_isolation_flags(parser.add_argument_group("isolation"))
    _add_sandbox_flags(parser.add_argument_group("sandbox logs"))
    _add_health_flags(parser.add_argument_group("agent health and recovery (Mesos' flags)"))
    _add_auth_flags(parser.add_argument_group("authentication and authorization (Mesos' flags)"))
    _add_election_flags(parser.add_argument_group("masters elected through ZooKeeper"))
    output = parser.add_argument_group("output")
    output.add_argument("--verbose", action="store_true", help="log what the master does")
    output.add_argument("--debug", action="store_true", help="debug logs and tracebacks")
    return parser


def _add_cluster_flags(group: Group) -> None:
    """The master: its port, allocation, heartbeats, offers, work dir and credentials."""
    group.add_argument("--port", metavar="N",
                       help="the master's port; 0 picks a free one (default 5050; with "
                            "--agents-only: the agents' port, default 5051)")
    group.add_argument("--agents", default="1", metavar="N",
                       help="how many agents (default 1); 0: a master alone, for the agents "
                            "of --agents-only processes to register with")
    group.add_argument("--agents-only", action="store_true",
                       help="run the agents alone, registered with the master at --master, "
                            "as Mesos agents run apart from their master: they outlive it "
                            "and re-register with it when it comes back (default: the "
                            "master and its agents in this process)")
    group.add_argument("--master", metavar="HOST:PORT",
                       help="with --agents-only: the address of the master")
    group.add_argument("--allocation-interval", default="1s", metavar="DURATION",
                       help="batch allocation interval (default 1s)")
    group.add_argument("--heartbeat-interval", default="15s", metavar="DURATION",
                       help="scheduler HEARTBEAT interval (default 15s); Mesos has no such "
                            "flag: its DEFAULT_HEARTBEAT_INTERVAL constant is 15s")
    group.add_argument("--executor-heartbeat-interval", default="30mins", metavar="DURATION",
                       help="HEARTBEAT interval to executors (default 30mins); Mesos has no "
                            "such flag: its DEFAULT_EXECUTOR_HEARTBEAT_INTERVAL constant is "
                            "30mins")
    group.add_argument("--offer-timeout", metavar="DURATION",
                       help="rescind offers held longer than this (default: never)")
    group.add_argument("--work-dir", metavar="DIR",
                       help="directory for sandboxes (default: a temporary one)")
    group.add_argument("--credentials", metavar="FILE",
                       help="Mesos credentials file; frameworks must then authenticate (HTTP "
                            "basic) (default: none)")


def _add_auth_flags(group: Group) -> None:
    """Executor and read-only HTTP authentication, and the master's ACLs."""
    group.add_argument(
        "--authenticate-http-executors", action="store_true",
        help="each executor gets a token (MESOS_EXECUTOR_AUTHENTICATION_TOKEN, a JWT of its "
             "framework, executor and container) and the executor API refuses calls without "
             "it (401) or with another executor's (403) (default off)")
    group.add_argument(
        "--jwt-secret-key", metavar="FILE",
        help="with --authenticate-http-executors: the key that signs the tokens (default: a "
             "random key per agent)")
    group.add_argument(
        "--authenticate-http-readonly", action="store_true",
        help="the read-only endpoints need HTTP basic auth: the master's (/master/state, "
             "/master/slaves, ...) with --credentials, the agents' (their /state, "
             "/monitor/statistics and /files) with --http-credentials (default off)")
    group.add_argument(
        "--http-credentials", metavar="FILE",
        help="credentials file of the agents' HTTP endpoints, as --credentials (default: "
             "--credentials)")
    group.add_argument(
        "--acls", metavar="FILE",
        help="the master's ACLs, Mesos' JSON: permissive, register_frameworks, run_tasks, "
             "view_roles (default: everything allowed)")


def _add_election_flags(group: Group) -> None:
    """Several masters elected through ZooKeeper (:mod:`localmesos.elected_cli`)."""
    group.add_argument(
        "--zk", metavar="URL",
        help="elect the masters through ZooKeeper, as Mesos' --zk: "
             "zk://HOST:PORT[,HOST:PORT...]/PATH (default: one master, no election)")
    group.add_argument(
        "--masters", default="1", metavar="N",
        help="with --zk: run N masters, each its own process on --port, --port+1, ..., and "
             "the agents in this one (default 1)")
    group.add_argument(
        "--master-only", action="store_true",
        help="with --zk: run one contending master in this process and no agents")
    group.add_argument(
        "--zk-session-timeout", default="10secs", metavar="DURATION",
        help="with --zk: how long ZooKeeper keeps a silent master's session, after which "
             "another is elected (Mesos' --zk_session_timeout, default 10secs)")


def load_acls(path: str, *, flag: str = "--acls") -> Acls:
    """Read Mesos' ACL file (JSON; a ``file://`` prefix is accepted).

    Raises:
        UsageError: naming the flag, the file and what is wrong with it.
    """
    if path.startswith("file://"):
        path = path[len("file://"):]
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise UsageError(f"{flag}: cannot read {path}: {reason}") from None
    try:
        return parse_acls(json.loads(text))
    except ValueError as exc:  # JSONDecodeError and AclError
        raise UsageError(f"{flag}: {path}: {exc}") from None


def _auth(args: argparse.Namespace, credentials: dict[str, str] | None) -> dict[str, Any]:
    """The authentication and ACL fields of :class:`ClusterConfig`.

    Raises:
        UsageError: an unreadable file, or a flag that needs another.
    """
    http_credentials = None if args.http_credentials is None else load_credentials(
        args.http_credentials, flag="--http-credentials")
    if args.authenticate_http_readonly and credentials is None and http_credentials is None:
        raise UsageError("--authenticate-http-readonly needs --credentials or "
                         "--http-credentials (who may read)")
    key = None
    if args.jwt_secret_key is not None:
        if not args.authenticate_http_executors:
            raise UsageError("--jwt-secret-key needs --authenticate-http-executors")
        try:
            key = Path(args.jwt_secret_key).read_bytes()
        except OSError as exc:
            raise UsageError(f"--jwt-secret-key: cannot read {args.jwt_secret_key}: "
                             f"{exc.strerror or exc}") from None
        if not key:
            raise UsageError(f"--jwt-secret-key: {args.jwt_secret_key} is empty")
    return {"authenticate_http_executors": args.authenticate_http_executors,
            "jwt_secret_key": key,
            "authenticate_http_readonly": args.authenticate_http_readonly,
            "http_credentials": http_credentials,
            "acls": None if args.acls is None else load_acls(args.acls)}


def _add_agent_flags(group: Group) -> None:
    """What every agent has."""
    group.add_argument("--cpus", metavar="N",
                       help="CPUs per agent (default: this machine's cores)")
    group.add_argument("--mem", metavar="SIZE",
                       help=f"memory per agent: {SIZE_HELP} (default: total - 1GB)")
    group.add_argument("--disk", metavar="SIZE",
                       help="disk per agent, as --mem (default, as Mesos: the size of the work "
                            "dir's file system - 5GB, half of it below 10GB)")
    group.add_argument(
        "--gpus", default="auto", metavar="N",
        help="GPUs per agent: auto (default: this machine's NVIDIA GPUs, found with NVML or "
             "nvidia-smi and split between the agents) or a number N (indices 0..N-1)")
    group.add_argument("--ports", default="[31000-32000]", metavar="RANGES",
                       help="port ranges, split between the agents (default [31000-32000])")
    group.add_argument("--attributes", default="", metavar="ATTRS",
                       help="agent attributes, e.g. rack:r1;zone:eu (default: none)")


def _add_isolation_flags(group: Group) -> None:
    """How tasks are confined, and agents slowed."""
    group.add_argument(
        "--isolation", default="auto", metavar="ISOLATORS",
        help="the agents' isolators, as Mesos' --isolation: posix/cpu,posix/mem (nothing "
             "confines a task) or cgroups/cpu,cgroups/mem (a cgroup v1 memory limit and CPU "
             "shares per task; a task over its memory fails); auto (default): cgroups where "
             "this machine allows them, else posix with one warning")
    group.add_argument(
        "--cgroups-enable-cfs", action="store_true",
        help="with cgroups/cpu, cap each task at its CPUs with a CFS quota (Mesos' flag; "
             "default off)")
    group.add_argument(
        "--switch-user", action=argparse.BooleanOptionalAction, default=True,
        help="run each task as its user, its command's or else its framework's (Mesos' "
             "--switch_user; default on): the user must exist on this machine and, unless it "
             "is the cluster's own, the cluster must run as root, else the task is dropped; "
             "--no-switch-user runs every task as the cluster's user")
    group.add_argument(
        "--agent-speed", default="", metavar="S1,S2,...",
        help="the share of its CPUs each agent's tasks get, in agent order (0 < S <= 1; "
             "missing ones 1, the default), e.g. --agents 4 --agent-speed 1,1,0.5,0.25: a "
             "cgroup CPU quota per agent (needs cgroup v1 'cpu' and root)")


def _add_sandbox_flags(group: Group) -> None:
    """The sandbox logs' caps (Mesos' logrotate container logger)."""
    for stream in ("stdout", "stderr"):
        group.add_argument(
            f"--max-{stream}-size", default="10MB", metavar="SIZE",
            help=f"cap of a task's sandbox {stream} before it is rotated to {stream}.1, as "
                 "--mem, at least one memory page (max_*_size; default 10MB)")
        group.add_argument(
            f"--logrotate-{stream}-options", default=DEFAULT_OPTIONS, metavar="OPTIONS",
            help=f"'rotate N': how many rotated {stream}.1..N files to keep (default "
                 f"'{DEFAULT_OPTIONS}'; 'rotate 0' keeps only {stream})")


def _add_resource_flags(group: Group) -> None:
    """``--resources`` and the per-agent ``--agent-*`` flags."""
    group.add_argument(
        "--resources", metavar="RES",
        help="each agent's resources in Mesos' --resources syntax, static reservations "
             "included, e.g. 'cpus(ml):4;gpus(ml):1;mem(*):8192' (or a JSON Resource array); "
             "names not given come from --cpus/--mem/--disk/--ports (default: those alone)")
    group.add_argument(
        "--agent-resources", action="append", default=[], metavar="RES",
        help="one agent's --resources, in order: the first use is agent 0's (it replaces "
             "--resources for that agent); repeatable")
    group.add_argument(
        "--agent-attributes", action="append", default=[], metavar="ATTRS",
        help="more attributes of one agent, in order: the first use is agent 0's, the next "
             "agent 1's, ... (e.g. --agents 2 --agent-attributes class:fast "
             "--agent-attributes 'class:edge;slowdown:2'); repeatable")
    group.add_argument(
        "--agent-hostname", action="append", default=[], metavar="NAME",
        help="one agent's hostname, in order (default: the master's host): it names the "
             "agent's machine for maintenance schedules; use names of this machine "
             "(localhost, 127.0.0.1); repeatable")


def _add_health_flags(group: Group) -> None:
    """The master's agent health checks and the agents' recovery timeouts (Mesos' flags)."""
    for flag, default, what in (
        ("--agent-ping-timeout", "15secs", "how long an agent has to answer a ping"),
        ("--agent-reregister-timeout", "10mins",
         "how long a restarted agent has to re-register before it is unreachable"),
        ("--registry-max-agent-age", "2weeks", "how long an unreachable agent is remembered"),
        ("--executor-reregistration-timeout", "2secs",
         "how long an executor has to subscribe again after its agent restarted"),
    ):
        group.add_argument(flag, default=default, metavar="DURATION",
                           help=f"{what} (default {default}, as Mesos)")
    group.add_argument(
        "--max-agent-ping-timeouts", default="5", metavar="N",
        help="pings an agent may miss in a row before it is marked unreachable (default 5)")


def _int(text: str, *, flag: str, low: int, high: int | None = None) -> int:
    what = f"a whole number >= {low}" if high is None else f"a whole number {low}..{high}"
    try:
        value = int(text)
    except ValueError:
        raise UsageError(f"{flag}: invalid value {text!r}: expected {what}") from None
    if value < low or (high is not None and value > high):
        raise UsageError(f"{flag}: invalid value {text!r}: expected {what}")
    return value


def _gpus(args: argparse.Namespace) -> tuple[int, tuple[int, ...] | None]:
    """``--gpus``: ``(gpus per agent, None)``, or ``(0, the machine's GPUs)`` for ``auto``."""
    if args.gpus.strip().lower() == "auto":
        from disauto.localmesos.containerizer.gpus import discover_gpus

        return 0, discover_gpus()
    try:
        return _int(args.gpus, flag="--gpus", low=0), None
    except UsageError:
        raise UsageError(
            f"--gpus: invalid value {args.gpus!r}: expected auto or a whole number >= 0"
        ) from None


def _size(text: str | None, *, flag: str) -> float | None:
    """``--mem``/``--disk``: a Mesos-style size in MB, or None when not given."""
    try:
        return None if text is None else parse_size_mb(text, what="size")
    except ResourceError as exc:
        raise UsageError(f"{flag}: {exc}") from None


def _agent_resources(args: argparse.Namespace) -> dict[str, Any]:
    """Each agent's ``cpus``, ``mem_mb``, ``disk_mb``, ``ports`` and ``attributes``."""
    cpus: float | None = None
    if args.cpus is not None:
        try:
            cpus = float(args.cpus)
        except ValueError:
            cpus = -1.0
        if not math.isfinite(cpus) or cpus <= 0:
            raise UsageError(f"--cpus: invalid value {args.cpus!r}: expected a number > 0")
    mem = _size(args.mem, flag="--mem")
    disk = _size(args.disk, flag="--disk")
    try:
        ports = tuple(parse_ranges(args.ports))
    except ResourceError as exc:
        raise UsageError(f"--ports: {exc}") from None
    if any(end > 65535 for _, end in ports):
        raise UsageError(f"--ports: invalid value {args.ports!r}: ports must be 0..65535")
    return {"cpus": cpus, "mem_mb": mem, "disk_mb": disk, "ports": ports,
            "attributes": parse_attributes(args.attributes)}


def _intervals(args: argparse.Namespace) -> dict[str, Any]:
    """The master's ``allocation_interval``, ``heartbeat_interval`` and ``offer_timeout``, and
    the agents' ``executor_heartbeat_interval``."""
    allocation = parse_duration(args.allocation_interval, flag="--allocation-interval")
    heartbeat = parse_duration(args.heartbeat_interval, flag="--heartbeat-interval")
    executor_heartbeat = parse_duration(args.executor_heartbeat_interval,
                                        flag="--executor-heartbeat-interval")
    offer_timeout = (
        None if args.offer_timeout is None
        else parse_duration(args.offer_timeout, flag="--offer-timeout")
    )
    if offer_timeout is not None and not offer_timeout > 0:
        raise UsageError(f"--offer-timeout: invalid value {args.offer_timeout!r}: must be > 0")
    return {"allocation_interval": allocation, "heartbeat_interval": heartbeat,
            "executor_heartbeat_interval": executor_heartbeat, "offer_timeout": offer_timeout}


def config_from_args(args: argparse.Namespace) -> ClusterConfig:
    """Turn parsed arguments into a :class:`ClusterConfig`.

    Raises:
        UsageError: for the first invalid flag.
    """
    default_port = "5051" if args.agents_only else "5050"  # Mesos' agent's and master's
    port = _int(args.port or default_port, flag="--port", low=0, high=65535)
    agents = _int(args.agents, flag="--agents", low=1 if args.agents_only else 0)
    master_address(args)
    gpus, gpu_devices = _gpus(args)
    resources = _agent_resources(args)
    intervals = _intervals(args)
    credentials = None if args.credentials is None else load_credentials(args.credentials)
    config = ClusterConfig(
        agents=agents,
        gpus=gpus,
        gpu_devices=gpu_devices,
        port=port,
        work_dir=None if args.work_dir is None else Path(args.work_dir),
        credentials=credentials,
        sandbox_logging=_sandbox_logging(args),
        resources=_resources(args.resources, "--resources"),
        isolation=_isolation(args.isolation),
        cgroups_enable_cfs=args.cgroups_enable_cfs,
        switch_user=args.switch_user,
        **_auth(args, credentials),
        **resources,
        **intervals,
        **_health(args),
    )
    try:
        config.agent_list()
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    config = _per_agent_attributes(config, args.agent_attributes)
    config = _per_agent(config, args.agent_resources, "--agent-resources",
                        lambda text: {"resources": _resources(text, "--agent-resources")})
    config = _per_agent(config, args.agent_hostname, "--agent-hostname", _hostname)
    return _per_agent_speeds(config, args.agent_speed)


def master_address(args: argparse.Namespace) -> str | None:
    """``--master`` of ``--agents-only`` (``HOST:PORT``), None without ``--agents-only`` or
    with ``--zk`` (the agents follow the election's leader).

    Raises:
        UsageError: one without the other, or not ``HOST:PORT``.
    """
    if not args.agents_only:
        if args.master is not None:
            raise UsageError("--master: only with --agents-only (the master of those agents)")
        return None
    if getattr(args, "zk", None) is not None:
        if args.master is not None:
            raise UsageError("--agents-only: give --master HOST:PORT or --zk URL, not both")
        return None  # the leader ZooKeeper names
    if args.master is None:
        raise UsageError("--agents-only needs --master HOST:PORT (the master to register with) "
                         "or --zk URL (the masters' election)")
    host, _, port = args.master.strip().rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) <= 65535:
        raise UsageError(f"--master: invalid address {args.master!r}: expected HOST:PORT")
    return f"{host}:{int(port)}"


def _resources(text: str | None, flag: str) -> RoleResources | None:
    """Mesos' resource text of ``--resources``/``--agent-resources``."""
    if text is None:
        return None
    try:
        parsed = RoleResources.parse(text)
    except ResourceError as exc:
        raise UsageError(f"{flag}: {exc}") from None
    if any(end > 65535 for _, end in parsed.ranges("ports")):
        raise UsageError(f"{flag}: invalid resources {text!r}: ports must be 0..65535")
    if parsed.scalar("gpus") != int(parsed.scalar("gpus")):
        raise UsageError(f"{flag}: invalid resources {text!r}: gpus must be a whole number")
    return parsed


def _isolation(text: str) -> str:
    """``--isolation``: checked here; ``auto`` and cgroups are resolved as the cluster starts
    (where cgroups cannot run, an explicit request fails with one line)."""
    try:
        parse_isolation(text)
    except ValueError as exc:
        raise UsageError(f"--isolation: {exc}") from None
    return text


def _hostname(text: str) -> dict[str, Any]:
    name = text.strip()
    if not name or any(c.isspace() or c in "/:" for c in name):
        raise UsageError(f"--agent-hostname: invalid hostname {text!r}")
    return {"hostname": name}


def _per_agent(config: ClusterConfig, texts: Sequence[str], flag: str,
               parse: Callable[[str], dict[str, Any]]) -> ClusterConfig:
    """``config`` with the i-th agent changed by the i-th use of ``flag``.

    Raises:
        UsageError: more uses than agents, or a value that does not parse.
    """
    if not texts:
        return config
    agents = config.agent_list()
    if len(texts) > len(agents):
        raise UsageError(f"{flag}: given {len(texts)} times for {len(agents)} agent(s); give "
                         "it at most once per agent (--agents N)")
    changed = list(agents)
    for index, text in enumerate(texts):
        try:
            changed[index] = replace(agents[index], **parse(text))
        except ValueError as exc:
            raise UsageError(f"{flag}: {exc}") from None
    return replace(config, agent_configs=tuple(changed))


def _health(args: argparse.Namespace) -> dict[str, Any]:
    """The ping, re-registration and registry timeouts."""
    out: dict[str, Any] = {
        name.lstrip("-").replace("-", "_"): parse_duration(getattr(args, attr), flag=name)
        for name, attr in (("--agent-ping-timeout", "agent_ping_timeout"),
                           ("--agent-reregister-timeout", "agent_reregister_timeout"),
                           ("--registry-max-agent-age", "registry_max_agent_age"),
                           ("--executor-reregistration-timeout",
                            "executor_reregistration_timeout"))
    }
    out["max_agent_ping_timeouts"] = _int(args.max_agent_ping_timeouts,
                                          flag="--max-agent-ping-timeouts", low=1)
    return out


def parse_speeds(text: str, agents: int, *, flag: str = "--agent-speed") -> list[float]:
    """``1,0.5`` → one speed per agent (0 < speed <= 1), the missing ones 1.

    Raises:
        UsageError: a value that is not a number in (0, 1], or more values than agents.
    """
    speeds: list[float] = []
    for item in text.split(","):
        try:
            speed = float(item)
        except ValueError:
            speed = math.nan
        if not 0 < speed <= 1:
            raise UsageError(f"{flag}: invalid value {item.strip()!r}: expected comma-separated "
                             "numbers in (0, 1], one per agent")
        speeds.append(speed)
    if len(speeds) > agents:
        raise UsageError(f"{flag}: {len(speeds)} speeds for {agents} agent(s); give at most one "
                         "per agent (--agents N)")
    return speeds + [1.0] * (agents - len(speeds))


def _per_agent_speeds(config: ClusterConfig, text: str) -> ClusterConfig:
    """``config`` with each agent's ``--agent-speed``; refused where CPU groups cannot be made.

    Raises:
        UsageError: a bad value, or no cgroup ``cpu`` controller this process may use.
    """
    if not text.strip():
        return config
    agents = config.agent_list()
    speeds = parse_speeds(text, len(agents))
    if any(speed < 1 for speed in speeds):
        try:
            cpu_quota.check_available()
        except cpu_quota.CpuQuotaError as exc:
            raise UsageError(f"--agent-speed: cannot slow agents down: {exc}") from None
    return replace(config, agent_configs=tuple(
        replace(agent, speed=speed) for agent, speed in zip(agents, speeds, strict=True)))


def _per_agent_attributes(config: ClusterConfig, texts: Sequence[str]) -> ClusterConfig:
    """``config`` with agent i's attributes extended by the i-th ``--agent-attributes``
    (heterogeneous agents, e.g. ``class:edge`` for the deadline policy).

    Raises:
        UsageError: more uses than agents, or an attribute that does not parse.
    """
    if not texts:
        return config
    agents = config.agent_list()
    if len(texts) > len(agents):
        raise UsageError(f"--agent-attributes: given {len(texts)} times for {len(agents)} "
                         "agent(s); give it at most once per agent (--agents N)")
    extra = [parse_attributes(text, flag="--agent-attributes") for text in texts]
    extra += [{}] * (len(agents) - len(extra))
    return replace(config, agent_configs=tuple(
        replace(agent, attributes={**agent.attributes, **more})
        for agent, more in zip(agents, extra, strict=True)))


def _sandbox_logging(args: argparse.Namespace) -> SandboxLogging:
    """The sandbox log caps of ``--max-std{out,err}-size`` and ``--logrotate-*-options``.

    Raises:
        UsageError: naming the flag.
    """
    rotations = {}
    for stream in ("stdout", "stderr"):
        flag = f"--max-{stream}-size"
        try:
            size = round(parse_size_mb(getattr(args, f"max_{stream}_size"), what="size") * 2**20)
            Rotation(size)
        except (ResourceError, LogRotateError) as exc:
            raise UsageError(f"{flag}: {exc}") from None
        try:
            rotate = parse_options(getattr(args, f"logrotate_{stream}_options"))
        except LogRotateError as exc:
            raise UsageError(f"--logrotate-{stream}-options: {exc}") from None
        rotations[stream] = Rotation(size, rotate)
    return SandboxLogging(rotations["stdout"], rotations["stderr"])


