"""The job's scheduler driver against a master that goes silent with its connection open (a
frozen one): pymesos' own I/O loop, a socket server that answers SUBSCRIBE and then says
nothing more."""

from __future__ import annotations

import json
import socket
import threading
import time
from typing import Any

import pytest

from disauto.common.zk_masters import parse_zk
from disauto.common.zk_masters import start_client
from disauto.framework._mesos_link import MesosLink
from disauto.framework._scheduler_driver import CALL_TIMEOUT
from disauto.framework._scheduler_driver import JobSchedulerDriver


pytestmark = pytest.mark.integration


class SilentMaster:
    """Answers each SUBSCRIBE to ``path`` with ``events`` (a SUBSCRIBED, a HEARTBEAT), then
    keeps the connection open and silent; any other request is 404 (``/version``)."""

    def __init__(self, path: bytes, events: list[dict[str, Any]],
                 redirect_to: str | None = None) -> None:
        self.path = path
        self.events = events
        self.redirect_to = redirect_to
        """While set, each SUBSCRIBE gets a 307 to this ``host:port`` (a master that has not
        seen the election yet sends the framework to the leader it knew)."""
        self.redirected = 0
        self.subscribes: list[dict[str, Any]] = []
        self._server = socket.create_server(("127.0.0.1", 0))
        self._open: list[socket.socket] = []
        self.address = f"127.0.0.1:{self._server.getsockname()[1]}"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self._server.accept()
            except OSError:
                return
            self._open.append(conn)
            request = b""
            while b"\r\n\r\n" not in request:
                request += conn.recv(65536)
            head, body = request.split(b"\r\n\r\n", 1)
            if not head.startswith(b"POST " + self.path):
                conn.sendall(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
                conn.close()
                continue
            if self.redirect_to is not None:
                self.redirected += 1
                conn.sendall(b"HTTP/1.1 307 Temporary Redirect\r\nContent-Length: 0\r\n"
                             b"Location: //%s%s\r\n\r\n" % (self.redirect_to.encode(), self.path))
                conn.close()
                continue
            length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
            while len(body) < length:
                body += conn.recv(65536)
            self.subscribes.append(json.loads(body))
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                         b"Mesos-Stream-Id: s-%d\r\nTransfer-Encoding: chunked\r\n\r\n"
                         % len(self.subscribes))
            for event in self.events:
                record = json.dumps(event).encode()
                record = b"%d\n%s" % (len(record), record)
                conn.sendall(b"%x\r\n%s\r\n" % (len(record), record))

    def close(self) -> None:
        self._server.close()
        for conn in self._open:
            conn.close()


class Scheduler:
    def __init__(self, link: MesosLink) -> None:
        self.link = link
        self.disconnects = 0

    def registered(self, driver: Any, framework_id: Any, master_info: Any) -> None:
        self.link.subscribed(driver, framework_id["value"], "")

    def reregistered(self, driver: Any, master_info: Any) -> None:
        self.link.resubscribed(driver, "")

    def disconnected(self, driver: Any) -> None:
        self.disconnects += 1
        self.link.went_away()

    def processHeartBeat(self, driver: Any) -> None:  # noqa: N802 - pymesos API
        pass


def test_a_silent_master_s_stream_is_closed_and_the_framework_subscribes_again() -> None:
    master = SilentMaster(b"/api/v1/scheduler", [
        {"type": "SUBSCRIBED", "subscribed": {"framework_id": {"value": "F-1"},
                                              "heartbeat_interval_seconds": 0.2}},
        {"type": "HEARTBEAT"}])
    link = MesosLink()
    scheduler = Scheduler(link)
    driver = JobSchedulerDriver(scheduler, {"user": "u", "name": "n"}, master.address,
                                link=link, use_addict=False, implicit_acknowledgements=False)
    driver.start()
    try:
        deadline = time.monotonic() + 20
        while len(master.subscribes) < 2 and time.monotonic() < deadline:
            link.check_heartbeats()  # what the run loop does every half second
            time.sleep(0.05)
        first, again = master.subscribes[:2]
        assert "framework_id" not in first and again["framework_id"] == {"value": "F-1"}
        assert scheduler.disconnects >= 1  # pymesos closed the silent stream itself
        assert str(driver.master) == master.address
    finally:
        driver.stop(failover=True)
        driver.join()
        master.close()


def test_a_call_to_the_master_times_out_in_seconds_not_in_a_day() -> None:
    driver = JobSchedulerDriver(Scheduler(MesosLink()), {"user": "u", "name": "n"},
                                "127.0.0.1:5050", link=MesosLink())
    assert driver._get_conn() is None  # noqa: SLF001 - not subscribed: calls fail at once
    driver._master, driver.stream_id = "127.0.0.1:5050", "s-1"  # noqa: SLF001 - subscribed
    conn = driver._get_conn()  # noqa: SLF001 - the calls' connection (not connected yet)
    assert conn is not None and conn.timeout == CALL_TIMEOUT == 10.0


def test_under_zk_a_redirect_to_a_master_zookeeper_does_not_name_is_not_followed(
        zookeeper: Any) -> None:
    """A master that has not seen the election yet redirects the SUBSCRIBE to the leader it
    knew (frozen: it accepts connections and answers nothing); the driver stays with the master
    ZooKeeper names, as Mesos' scheduler library does, and subscribes once that one leads."""
    frozen = socket.create_server(("127.0.0.1", 0))  # never accepted: it answers nothing
    frozen_address = f"127.0.0.1:{frozen.getsockname()[1]}"
    master = SilentMaster(b"/api/v1/scheduler", [
        {"type": "SUBSCRIBED", "subscribed": {"framework_id": {"value": "F-1"},
                                              "heartbeat_interval_seconds": 15}}],
        redirect_to=frozen_address)
    url = zookeeper.url("/driver-redirect")
    client = start_client(parse_zk(url))
    host, port = master.address.split(":")
    client.create("/driver-redirect/json.info_", json.dumps(
        {"id": "m-2", "hostname": host, "port": int(port),
         "address": {"ip": host, "port": int(port)}}).encode(), sequence=True, makepath=True)
    link = MesosLink()
    driver = JobSchedulerDriver(Scheduler(link), {"user": "u", "name": "n"}, url, link=link,
                                use_addict=False, implicit_acknowledgements=False)
    driver.start()
    try:
        deadline = time.monotonic() + 30
        while driver.redirects_ignored < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert master.redirected >= 3 and driver.redirects_ignored >= 3
        assert str(driver.master) == master.address  # not the frozen one
        master.redirect_to = None  # it has learned that it leads
        while not master.subscribes and time.monotonic() < deadline:
            time.sleep(0.05)
        assert master.subscribes and str(driver.master) == master.address
    finally:
        driver.stop(failover=True)
        driver.join()
        master.close()
        frozen.close()
        client.stop()
        client.close()
