"""``da-cluster --zk``: masters elected through ZooKeeper, and ``da-cluster master list``.

Example::

    da-cluster --zk zk://127.0.0.1:2181/mesos --master-only --port 5051
    da-cluster --zk zk://127.0.0.1:2181/mesos --masters 3 --agents 2
    da-cluster master list --zk zk://127.0.0.1:2181/mesos

``--master-only`` runs one master that contends for leadership
(:mod:`localmesos.elected`) and exits 1, with one line, when its candidacy ends (as Mesos'
master does: "Lost candidacy"). ``master list`` prints each contending master's address, its
libprocess id and whether it leads, read from ZooKeeper as Mesos' detectors read it
(:mod:`common.zk_masters`). Every error is one line, ``da-cluster: error: ...``.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
import json
import os
import signal
import sys
import threading
from types import FrameType
from typing import NoReturn

from disauto.common.zk_masters import ZkUrl
from disauto.common.zk_masters import ZooKeeperError
from disauto.common.zk_masters import contenders
from disauto.common.zk_masters import parse_zk
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
