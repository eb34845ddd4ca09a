"""Task health checks (``TaskInfo.health_check``) as Mesos 1.11's command executor runs them.

Facts followed (apache/mesos 1.11 ``include/mesos/v1/mesos.proto`` ``HealthCheck``,
``src/checks/health_checker.cpp``, ``src/checks/checker_process.cpp``,
``src/launcher/executor.cpp``; the master's ``validateHealthCheck`` is in
:mod:`localmesos.protocol.validation`):

* Defaults: ``delay_seconds`` 15, ``interval_seconds`` 10, ``timeout_seconds`` 20,
  ``consecutive_failures`` 3, ``grace_period_seconds`` 10.
* The first check runs ``delay_seconds`` after the task starts, the next ``interval_seconds``
  after the previous one ended. A check that outlives ``timeout_seconds`` failed.
* COMMAND: the command (shell or not, as a task's) in the task's sandbox and environment; exit 0
  is healthy. HTTP: ``GET <scheme>://127.0.0.1:<port><path>``; 200..399 is healthy. TCP: a
  connection to ``127.0.0.1:<port>`` is healthy.
* A failure while the task has never been healthy and is within ``grace_period_seconds`` of its
  start is ignored. Any other failure sends an unhealthy update; the first success, and the
  first after failures, a healthy one. After ``consecutive_failures`` failures in a row the task
  is killed, and its TASK_KILLED carries ``healthy: false``.
* Each update is the last TASK_RUNNING again (new uuid and timestamp) with ``healthy`` and
  ``reason: REASON_TASK_HEALTH_CHECK_STATUS_UPDATED``; none is sent once a kill began.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Mapping
from dataclasses import dataclass
import http.client
import logging
import socket
import subprocess
import threading
import time
from typing import Any

from disauto.localmesos.containerizer.command import RunAs
from disauto.localmesos.containerizer.command import command_line
from disauto.localmesos.protocol.validation import health_check_type


logger = logging.getLogger("disauto.localmesos.agent")

HEALTH_REASON = "REASON_TASK_HEALTH_CHECK_STATUS_UPDATED"


@dataclass(frozen=True)
class HealthCheck:
    """A validated ``HealthCheck`` with Mesos' defaults filled in."""

    kind: str
    delay: float = 15.0
    interval: float = 10.0
    timeout: float = 20.0
    consecutive_failures: int = 3
    grace_period: float = 10.0
    command: Mapping[str, Any] | None = None
    http: Mapping[str, Any] | None = None
    tcp: Mapping[str, Any] | None = None

    @classmethod
    def from_json(cls, spec: Mapping[str, Any]) -> HealthCheck:
        def number(name: str, default: float) -> float:
            value = spec.get(name)
            return float(value) if isinstance(value, int | float) else default

        failures = spec.get("consecutive_failures", 3)
        return cls(
            kind=str(health_check_type(spec)),
            delay=number("delay_seconds", 15.0),
            interval=number("interval_seconds", 10.0),
            timeout=number("timeout_seconds", 20.0),
            consecutive_failures=int(failures) if isinstance(failures, int) else 3,
            grace_period=number("grace_period_seconds", 10.0),
            command=spec.get("command"),
            http=spec.get("http"),
            tcp=spec.get("tcp"),
        )


# -- one check ----------------------------------------------------------------------------------


def command_check(argv: tuple[str, list[str]], env: Mapping[str, str], cwd: str,
                  timeout: float, run_as: RunAs | None = None) -> bool:
    """Run a COMMAND check (``(executable, argv)`` as :func:`executor.command_line` gives), as
    the task's user (``run_as``; Mesos runs it from the task's executor, which runs as it)."""
    executable, args = argv
    user: dict[str, Any] = {}
    if run_as is not None:
        user = {"user": run_as.uid, "group": run_as.gid, "extra_groups": list(run_as.groups)}
    try:
        process = subprocess.Popen(  # noqa: S603 - the task's own health command
            args, executable=executable, env=dict(env), cwd=cwd, stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
            **user,
        )
    except OSError:
        return False
    try:
        return process.wait(timeout) == 0
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        return False


def http_check(target: Mapping[str, Any], timeout: float) -> bool:
    scheme = str(target.get("scheme", "http"))
    factory = http.client.HTTPSConnection if scheme == "https" else http.client.HTTPConnection
    conn = factory("127.0.0.1", int(target.get("port", 0)), timeout=timeout)
    try:
        conn.request("GET", str(target.get("path", "/")))
        return 200 <= conn.getresponse().status < 400
    except (OSError, http.client.HTTPException):
        return False
    finally:
        conn.close()


def tcp_check(tcp: Mapping[str, Any], timeout: float) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", int(tcp.get("port", 0))), timeout=timeout):
            return True
    except OSError:
        return False


def health_probe(spec: HealthCheck, env: Mapping[str, str], sandbox: Any,
                 run_as: RunAs | None = None) -> Callable[[], bool]:
    """The one-check function of a task's health check (run in its sandbox and environment, a
    command as the task's user)."""
    if spec.kind == "COMMAND":
        argv = command_line(spec.command or {})
        return lambda: command_check(argv, env, str(sandbox), spec.timeout, run_as)
    if spec.kind == "HTTP":
        return lambda: http_check(spec.http or {}, spec.timeout)
    return lambda: tcp_check(spec.tcp or {}, spec.timeout)


# -- the checker --------------------------------------------------------------------------------


class HealthChecker:
    """Runs ``check()`` on Mesos' schedule and calls ``report(healthy, kill)`` as Mesos'
    health checker calls back its executor; runs on a thread of its own until :meth:`stop`."""

    def __init__(self, spec: HealthCheck, check: Callable[[], bool],
                 report: Callable[[bool, bool], None], name: str = "health") -> None:
        self.spec = spec
        self._check = check
        self._report = report
        self._stop = threading.Event()
        self._started = time.monotonic()
        self._initializing = True
        self.failures = 0
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> None:
        self._started = time.monotonic()
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        if self._stop.wait(self.spec.delay):
            return
        while not self._stop.is_set():
            healthy = self._check()
            if self._stop.is_set():
                return
            self.result(healthy, time.monotonic())
            if self._stop.wait(self.spec.interval):
                return

    def result(self, healthy: bool, now: float) -> None:
        """Account one check result (Mesos' ``HealthChecker::success``/``failure``)."""
        if healthy:
            if self._initializing or self.failures > 0:
                self._initializing = False
                self.failures = 0
                self._report(True, False)
            return
        grace = self.spec.grace_period
        if self._initializing and grace > 0 and now - self._started <= grace:
            logger.info("Ignoring a failed health check: still in the grace period")
            return
        self.failures += 1
        self._report(False, self.failures >= self.spec.consecutive_failures)
