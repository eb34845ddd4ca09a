"""``da-cluster``: run an embedded Mesos master and N agents until interrupted.

Example::

    da-cluster --agents 3 --cpus 12 --mem 20GB --allocation-interval 1s
    da-cluster agent partition <agent id> --master 127.0.0.1:5050 --for 20s

prints the master address (for ``MesosSchedulerDriver``/``da-submit --master``) and the web UI
URL, serves until SIGINT or SIGTERM, then stops every task and exits 0. Every bad flag is one
line on stderr, ``da-cluster: error: ...``, naming the flag and what is valid (exit 2).

The master and its agents may also run in two processes, the agents outliving the master
(:mod:`localmesos.agent_host`)::

    da-cluster --agents 0 --port 5050
    da-cluster --agents-only --master 127.0.0.1:5050 --agents 2 --port 5051

the second prints ``Agents: host:port`` (their endpoints) once it serves; its agents register
with the master as soon as it answers.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from collections.abc import Sequence
from dataclasses import replace
import enum
import logging
import signal
import sys
import threading
from types import FrameType
from typing import Any
from typing import Protocol

from disauto.common.zk_masters import ZK_LOG
from disauto.common.zk_masters import LeaderWatch
from disauto.common.zk_masters import ZooKeeperError
from disauto.localmesos import admin_cli
from disauto.localmesos import elected_cli
from disauto.localmesos.agent_host import AgentHost
from disauto.localmesos.agent_host import fixed_leader
from disauto.localmesos.cli_flags import PROG
from disauto.localmesos.cli_flags import UsageError
from disauto.localmesos.cli_flags import build_parser
from disauto.localmesos.cli_flags import config_from_args
from disauto.localmesos.cli_flags import load_credentials
from disauto.localmesos.cli_flags import master_address
from disauto.localmesos.cli_flags import parse_attributes
from disauto.localmesos.cli_flags import parse_duration
from disauto.localmesos.cli_flags import parse_speeds
from disauto.localmesos.cluster import ClusterConfig
from disauto.localmesos.cluster import LocalCluster
from disauto.localmesos.master.records import MESOS_VERSION


__all__ = ["ExitStatus", "UsageError", "build_parser", "config_from_args", "load_credentials",
           "main", "parse_attributes", "parse_duration", "parse_speeds"]
logger = logging.getLogger(__name__)


class ExitStatus(enum.IntEnum):
    """Exit codes of ``da-cluster``."""

    SUCCESS = 0
    ERROR = 1
    USAGE = 2


# -- main -------------------------------------------------------------------------------------


def _error(message: str) -> None:
    print(f"{PROG}: error: {message}", file=sys.stderr)


class _Runnable(Protocol):
    """A :class:`LocalCluster` or an :class:`AgentHost`."""

    def start(self) -> Any: ...

    def stop(self) -> None: ...


def _start(cluster: _Runnable, config: ClusterConfig, debug: bool) -> ExitStatus | None:
    """Start the cluster; the exit status (after one error line) when it cannot start."""
    try:
        cluster.start()
    except OSError as exc:
        if debug:
            raise
        reason = exc.strerror or str(exc)
        if config.work_dir is not None and exc.filename is not None:
            _error(f"--work-dir: cannot use {exc.filename}: {reason}")
        else:
            _error(f"--port {config.port}: cannot listen on {config.host}:{config.port}: {reason}")
        return ExitStatus.ERROR
    except ValueError as exc:
        if debug:
            raise
        _error(str(exc))
        return ExitStatus.USAGE
    return None


def _announce(cluster: LocalCluster) -> None:
    """Where the cluster is: the master's address, the web UI and the work dir."""
    agents = f"{len(cluster.agents)} agent(s)"
    if cluster.agents:
        agents += f" of {cluster.agents[0].total}"
    print(f"localmesos {MESOS_VERSION}: master at {cluster.address} with {agents}", flush=True)
    print(f"Master: {cluster.address}", flush=True)
    print(f"Web UI: {cluster.url}/", flush=True)
    print(f"Work dir: {cluster.work_dir}", flush=True)


def _announce_agents(host: AgentHost, master: str) -> None:
    """Where the agents are served, and their master."""
    agents = host.config.agent_list()
    print(f"localmesos {MESOS_VERSION}: {len(agents)} agent(s) of {agents[0].total()} at "
          f"{host.address}, registering with the master at {master}", flush=True)
    print(f"Agents: {host.address}", flush=True)
    print(f"Work dir: {host.work_dir}", flush=True)


def _serve(cluster: _Runnable, config: ClusterConfig, debug: bool,
           announce: Callable[[], None]) -> int:
    """Start, announce and serve until SIGINT or SIGTERM; stop the cluster whatever happens."""
    stop = threading.Event()

    def _on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    previous = {sig: signal.signal(sig, _on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        failed = _start(cluster, config, debug)
        if failed is not None:
            return failed
        announce()
        while not stop.wait(0.5):
            pass
        print("Stopping...", file=sys.stderr, flush=True)
        return ExitStatus.SUCCESS
    except Exception as exc:  # noqa: BLE001 - the one error funnel of the command
        if debug:
            raise
        _error(f"{type(exc).__name__}: {exc}")
        return ExitStatus.ERROR
    finally:
        cluster.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``da-cluster``; returns the exit status.

    Args:
        argv: the arguments (default ``sys.argv[1:]``).
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["agent"]:
        return admin_cli.main(argv[1:])
    if argv[:1] == ["master"]:
        return elected_cli.master_main(argv[1:])
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        config = config_from_args(args)
    except UsageError as exc:
        _error(str(exc))
        return ExitStatus.USAGE
    except SystemExit as exc:  # --help
        return int(exc.code or 0)
    level = logging.DEBUG if args.debug else logging.INFO if args.verbose else logging.WARNING
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    # ZooKeeper's client warns of every refused connection; the one line of an error says it.
    ZK_LOG.setLevel(logging.INFO if args.verbose or args.debug else logging.ERROR)
    if args.agents_only and args.zk is not None:
        return _serve_agents_of_elected(args, config)
    if args.zk is not None or args.master_only or args.masters != "1":
        return _serve_elected(args, config, argv)
    master = master_address(args)
    if master is not None:
        host = AgentHost(config, fixed_leader(master))
        return _serve(host, config, args.debug, lambda: _announce_agents(host, master))
    cluster = LocalCluster(config)
    return _serve(cluster, config, args.debug, lambda: _announce(cluster))


def _serve_agents_of_elected(args: argparse.Namespace, config: ClusterConfig) -> int:
    """``--agents-only --zk URL``: agents that register with the master ZooKeeper names as
    leader, and re-register with each next one (Mesos' agents with ``--master=zk://``)."""
    try:
        session_timeout = parse_duration(args.zk_session_timeout, flag="--zk-session-timeout")
        watch = LeaderWatch(str(elected_cli.zk_url(args.zk)), session_timeout)
    except UsageError as exc:
        _error(str(exc))
        return ExitStatus.USAGE
    try:
        watch.start()
    except ZooKeeperError as exc:
        _error(f"--zk: {exc}")
        return ExitStatus.ERROR
    try:
        host = AgentHost(config, watch)
        return _serve(host, config, args.debug, lambda: _announce_agents(host, str(watch.url)))
    finally:
        watch.stop()


def _serve_elected(args: argparse.Namespace, config: ClusterConfig,
                   argv: Sequence[str]) -> int:
    """``--zk``: one contending master (``--master-only``), or N of them and the agents."""
    try:
        if args.zk is None:
            raise UsageError("--masters and --master-only need --zk zk://HOST:PORT/PATH")
        url = elected_cli.zk_url(args.zk)
        session_timeout = parse_duration(args.zk_session_timeout, flag="--zk-session-timeout")
        masters = int(args.masters) if args.masters.isdigit() else 0
        if masters < 1:
            raise UsageError(f"--masters: invalid value {args.masters!r}: a whole number >= 1")
    except UsageError as exc:
        _error(str(exc))
        return ExitStatus.USAGE
    if args.master_only:
        return elected_cli.serve_master(replace(config, agents=0), url, session_timeout)
    return elected_cli.serve_masters(argv, config, url, masters,
                                     debug=args.debug)


if __name__ == "__main__":
    sys.exit(main())
