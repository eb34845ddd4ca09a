"""``da-cluster``: run an embedded Mesos master and N agents until interrupted.

Example::

    da-cluster --agents 3 --cpus 12 --mem 20GB --allocation-interval 1s
    da-cluster agent partition <agent id> --master 127.0.0.1:5050 --for 20s

prints the master address (for ``MesosSchedulerDriver``/``da-submit --master``) and the web UI
URL, serves until SIGINT or SIGTERM, then stops every task and exits 0. Every bad flag is one
line on stderr, ``da-cluster: error: ...``, naming the flag and what is valid (exit 2).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import replace
import enum
import logging
import signal
import sys
import threading
from types import FrameType

from disauto.localmesos import admin_cli
from disauto.localmesos import elected_cli
from disauto.localmesos.cli_flags import PROG
from disauto.localmesos.cli_flags import UsageError
from disauto.localmesos.cli_flags import build_parser
from disauto.localmesos.cli_flags import config_from_args
from disauto.localmesos.cli_flags import load_credentials
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


def _start(cluster: LocalCluster, config: ClusterConfig, debug: bool) -> ExitStatus | None:
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
    agent = cluster.agents[0].total if cluster.agents else None
    print(
        f"localmesos {MESOS_VERSION}: master at {cluster.address} with "
        f"{len(cluster.agents)} agent(s) of {agent}",
        flush=True,
    )
    print(f"Master: {cluster.address}", flush=True)
    print(f"Web UI: {cluster.url}/", flush=True)
    print(f"Work dir: {cluster.work_dir}", flush=True)


def _serve(cluster: LocalCluster, config: ClusterConfig, debug: bool) -> int:
    """Start, announce and serve until SIGINT or SIGTERM; stop the cluster whatever happens."""
    stop = threading.Event()

    def _on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    previous = {sig: signal.signal(sig, _on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        failed = _start(cluster, config, debug)
        if failed is not None:
            return failed
        _announce(cluster)
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
    if args.zk is not None or args.master_only or args.masters != "1":
        return _serve_elected(args, config)
    return _serve(LocalCluster(config), config, args.debug)


def _serve_elected(args: argparse.Namespace, config: ClusterConfig) -> int:
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
    return elected_cli.serve_masters(args, config, url, masters)


if __name__ == "__main__":
    sys.exit(main())
