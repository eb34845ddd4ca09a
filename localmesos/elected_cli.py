"""``da-cluster --zk``: masters elected through ZooKeeper, and ``da-cluster master list``.

Example::

    da-cluster --zk zk://127.0.0.1:2181/mesos --master-only --port 5051
    da-cluster --zk zk://127.0.0.1:2181/mesos --masters 3 --agents 2
    da-cluster master list --zk zk://127.0.0.1:2181/mesos

``--master-only`` runs one master that contends for leadership
(:mod:`localmesos.elected`) and exits 1, with one line, when its candidacy ends (as Mesos'
master does: "Lost candidacy"). ``master list`` prints each contending master's address, its
libprocess id and whether it leads, read from ZooKeeper as Mesos' detectors read it
(:mod:`common.zk_masters`). ``--masters N`` runs N such masters, each its own process on
``--port``, ``--port``+1, ... (started again when one exits, as a supervisor would), and the
agents in its own process (:mod:`localmesos.agent_host`), which follow the leader through
ZooKeeper. Every error is one line, ``da-cluster: error: ...``.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import replace
import json
import os
import signal
import subprocess
import sys
import threading
from types import FrameType
from typing import NoReturn

from disauto.common.zk_masters import LeaderWatch
from disauto.common.zk_masters import ZkUrl
from disauto.common.zk_masters import ZooKeeperError
from disauto.common.zk_masters import contenders
from disauto.common.zk_masters import parse_zk
from disauto.localmesos.agent_host import AgentHost
from disauto.localmesos.cli_flags import PROG
from disauto.localmesos.cli_flags import UsageError
from disauto.localmesos.cli_flags import parse_duration
from disauto.localmesos.cluster import ClusterConfig
from disauto.localmesos.cluster import LocalCluster
from disauto.localmesos.elected import ElectedMaster


def zk_url(text: str) -> ZkUrl:
    """``--zk``'s URL.

    Raises:
        UsageError: naming the flag and what is wrong.
    """
    try:
        return parse_zk(text)
    except ValueError as exc:
        raise UsageError(f"--zk: {exc}") from None


def _error(message: str) -> None:
    print(f"{PROG}: error: {message}", file=sys.stderr, flush=True)


# -- da-cluster master list -------------------------------------------------------------------


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def master_main(argv: Sequence[str]) -> int:
    """``da-cluster master list --zk URL [--json]``; the exit status."""
    parser = _Parser(prog=f"{PROG} master", description="The masters contending under --zk.")
    parser.add_argument("action", choices=["list"])
    parser.add_argument("--zk", required=True, metavar="URL", help="zk://HOST:PORT/PATH")
    parser.add_argument("--timeout", default="5secs", metavar="DURATION",
                        help="how long ZooKeeper has to answer (default 5secs)")
    parser.add_argument("--json", action="store_true", help="print JSON")
    try:
        args = parser.parse_args(list(argv))
        url = zk_url(args.zk)
        timeout = parse_duration(args.timeout, flag="--timeout")
    except UsageError as exc:
        print(f"{PROG} master: error: {exc}", file=sys.stderr)
        return 2
    try:
        found = contenders(str(url), timeout)
    except ZooKeeperError as exc:
        print(f"{PROG} master: error: {exc}", file=sys.stderr)
        return 1
    rows = [{"address": c.address, "pid": str(c.info.get("pid", "")),
             "leading": index == 0, "znode": c.znode, "id": str(c.info.get("id", ""))}
            for index, c in enumerate(found)]
    if args.json:
        print(json.dumps({"zk": str(url), "masters": rows}, indent=2))
        return 0
    if not rows:
        print(f"no master contends under {url}")
        return 0
    width = max(len(r["address"]) for r in rows)
    print(f"{'ADDRESS':<{width}}  {'LEADS':<5}  {'ZNODE':<21}  PID")
    for row in rows:
        leads = "yes" if row["leading"] else "no"
        print(f"{row['address']:<{width}}  {leads:<5}  {row['znode']:<21}  {row['pid']}")
    return 0


# -- da-cluster --zk --master-only ------------------------------------------------------------


def serve_master(config: ClusterConfig, url: ZkUrl, session_timeout: float) -> int:
    """Run one contending master until SIGINT/SIGTERM (0) or until its candidacy ends (1)."""
    stop = threading.Event()
    lost: list[str] = []

    def _on_lost(reason: str) -> None:
        lost.append(reason)
        stop.set()

    def _on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    previous = {sig: signal.signal(sig, _on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    master = ElectedMaster(LocalCluster(config), url, _on_lost, session_timeout)
    try:
        try:
            master.start()
        except ZooKeeperError as exc:
            _error(f"--zk: {exc}")
            return 1
        except OSError as exc:
            _error(f"--port {config.port}: cannot listen on {config.host}:{config.port}: "
                   f"{exc.strerror or exc}")
            return 1
        address = master.cluster.address
        print(f"Master: {address} (contending under {url}, pid {os.getpid()})", flush=True)
        print(f"Web UI: {master.cluster.url}/", flush=True)
        while not stop.wait(0.5):
            pass
        if lost:
            # Mesos' master exits here ("Lost candidacy"): it may have missed what the next
            # leader did, and must not serve on.
            _error(f"lost candidacy as a leading master: {lost[0]}")
            os._exit(1)
        return 0
    finally:
        master.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)


# -- da-cluster --zk --masters N ---------------------------------------------------------------

#: Flags of ``da-cluster`` that take a value and are the supervisor's, not its masters'.
_NOT_FOR_MASTERS = frozenset({"--masters", "--port", "--agents", "--work-dir"})
#: Switches of the supervisor alone.
_SWITCHES_NOT_FOR_MASTERS = frozenset({"--agents-only", "--master-only"})


def master_argv(argv: Sequence[str], port: int) -> list[str]:
    """A master's command line: ``da-cluster`` ``argv`` without the supervisor's own flags,
    with ``--master-only --port PORT``."""
    out: list[str] = []
    skip = False
    for arg in argv:
        if skip:
            skip = False
            continue
        name = arg.split("=", 1)[0]
        if name in _NOT_FOR_MASTERS:
            skip = "=" not in arg
            continue
        if name in _SWITCHES_NOT_FOR_MASTERS:
            continue
        out.append(arg)
    return [sys.executable, "-m", "disauto.localmesos.cli", *out, "--master-only",
            "--port", str(port)]


class MasterProcesses:
    """N ``--master-only`` children on their ports, each started again when it exits (as a
    supervisor of Mesos masters does: a master that lost its candidacy exits on purpose)."""

    def __init__(self, argv: Sequence[str], ports: Sequence[int]) -> None:
        self.argv = list(argv)
        self.ports = list(ports)
        self.processes: dict[int, subprocess.Popen[str]] = {}

    def start(self, port: int) -> None:
        self.processes[port] = subprocess.Popen(  # noqa: S603 - our own module, no shell
            master_argv(self.argv, port), stdout=subprocess.DEVNULL, text=True)

    def start_all(self) -> None:
        for port in self.ports:
            self.start(port)

    def restart_exited(self) -> None:
        for port, process in list(self.processes.items()):
            status = process.poll()
            if status is not None:
                print(f"{PROG}: the master on port {port} exited ({status}); starting it again",
                      file=sys.stderr, flush=True)
                self.start(port)

    def stop(self) -> None:
        for process in self.processes.values():
            if process.poll() is None:
                process.terminate()
        for process in self.processes.values():
            try:
                process.wait(15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(5)


def serve_masters(argv: Sequence[str], config: ClusterConfig, url: ZkUrl, masters: int, *,
                  debug: bool = False) -> int:
    """``--masters N``: N contending masters, each its own process (restarted when it exits),
    and the agents in this process, following the leader through ZooKeeper. Serves until
    SIGINT or SIGTERM; the exit status."""
    base = config.port or 5050
    ports = list(range(base, base + masters))
    stop = threading.Event()

    def _on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    previous = {sig: signal.signal(sig, _on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    children = MasterProcesses(argv, ports)
    watch = LeaderWatch(str(url))
    host: AgentHost | None = None
    try:
        try:
            watch.start()
        except ZooKeeperError as exc:
            _error(f"--zk: {exc}")
            return 1
        children.start_all()
        host = AgentHost(replace(config, port=base + masters), watch)
        try:
            host.start()
        except OSError as exc:
            if debug:
                raise
            _error(f"cannot serve the agents on port {base + masters}: {exc.strerror or exc}")
            return 1
        addresses = ", ".join(f"{config.host}:{port}" for port in ports)
        print(f"Masters: {addresses} (elected through {url})", flush=True)
        print(f"Agents: {host.address}", flush=True)
        print(f"Work dir: {host.work_dir}", flush=True)
        while not stop.wait(0.5):
            children.restart_exited()
        print("Stopping...", file=sys.stderr, flush=True)
        return 0
    finally:
        if host is not None:
            host.stop()
        children.stop()
        watch.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
