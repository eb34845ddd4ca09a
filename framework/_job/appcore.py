"""AppCore's life in one job: launched, running, attached, relaunched, ended.

Each launch is an attempt (``appcore-<n>``) recorded in the store's AppCore runs. The life goes
WAITING (for an offer) → LAUNCHING → RUNNING → ATTACHED (AppCore called AttachAppCore and
serves runners at its address), back to WAITING when its task ends before the job does, and
ENDED with the job or past its restarts. What ends a task and whether it is relaunched is the
status handling's decision (``status.py``); this keeps the state and records it.

Methods run under the job's lock (the controller's).
"""

from __future__ import annotations

import logging
import time

from disauto.framework._store import JobStore


logger = logging.getLogger("disauto.framework._job")

MAX_PORT_RETRIES = 10
"""Launches of AppCore again, uncounted, after it found its offered port taken."""

WAITING = "WAITING"
LAUNCHING = "LAUNCHING"
RUNNING = "RUNNING"
ATTACHED = "ATTACHED"
ENDED = "ENDED"
_ON_AN_AGENT = (LAUNCHING, RUNNING, ATTACHED)


class AppCoreLife:
    """AppCore of the job recorded in ``store`` (a resumed job counts on from its attempts).

    Args:
        store: the job's record.
    """

    def __init__(self, store: JobStore) -> None:
        self._store = store
        runs = store.appcore_runs()
        self.attempt = max((int(r["attempt"]) for r in runs), default=0)
        self.task_id = ""
        """The current attempt's task ("" before the first launch)."""
        self.state = WAITING
        self._address = ""
        self._certificate = ""
        self._failures = 0
        self._port_retries = 0
        self.agent_id = ""
        """The agent of the current attempt's task."""
        self.unreachable_since: float | None = None
        """Since when Mesos says that agent is unreachable (None: reachable)."""
        self.heard_at = 0.0
        """When AppCore last called the framework (it is alive, wherever Mesos lost it)."""

    # -- reading -------------------------------------------------------------------------------

    def waiting(self) -> bool:
        """Whether AppCore waits for an offer."""
        return self.state == WAITING

    def endpoint(self) -> tuple[str, str]:
        """``(address, certificate PEM)`` while attached; ``("", "")`` otherwise."""
        if self.state != ATTACHED:
            return "", ""
        return self._address, self._certificate

    def live_task_id(self) -> str:
        """Its task while launched and not ended ("" otherwise): an AppCore that ended (a
        terminal status after the job ended, or past its restarts) is not waited for."""
        if self.task_id and self.state not in (WAITING, ENDED):
            return self.task_id
        return ""

    def task_locations(self, live: set[str]) -> list[tuple[str, str, bool]]:
        """``(task_id, agent_id, whether in live)`` of every attempt's task, as recorded."""
        return [(str(run["task_id"]), str(run["agent_id"]), str(run["task_id"]) in live)
                for run in self._store.appcore_runs() if run["agent_id"]]

    def next_task_id(self) -> str:
        return f"appcore-{self.attempt + 1}"

    # -- its task ------------------------------------------------------------------------------

    def launched(self, task_id: str, agent_id: str) -> bool:
        """Record a launch as ``task_id``; False if AppCore does not wait for one."""
        if self.state != WAITING:
            return False
        self.attempt += 1
        self.task_id = task_id
        self.agent_id = agent_id
        self.unreachable_since = None
        self.state = LAUNCHING
        self._address = ""
        self._store.add_appcore_run(self.attempt, task_id, agent_id)
        return True

    def running(self) -> None:
        """Its task runs (a launch's first TASK_RUNNING)."""
        if self.state == LAUNCHING:
            self.state = RUNNING
            self._store.update_appcore_run(self.attempt, state=RUNNING)

    def attach(self, address: str, certificate: str) -> None:
        """AppCore serves runners at ``address`` (with TLS: trusting ``certificate``)."""
        self._address = address
        self._certificate = certificate
        self.state = ATTACHED
        if self.attempt:
            self._store.update_appcore_run(self.attempt, address=address, state=ATTACHED)
        logger.info("AppCore attached from %s (attempt %d)", address, self.attempt)

    def task_ended(self, state: str) -> None:
        """Record its task's end (a Mesos terminal ``state``, or TASK_UNREACHABLE when the
        framework gave up on it)."""
        self._store.update_appcore_run(self.attempt, state=state, ended_at=time.time())
        self._address = ""
        self.unreachable_since = None

    def mark_unreachable(self, since: float) -> None:
        """Mesos says its task's agent is unreachable since ``since``: it is waited for."""
        if self.unreachable_since is None:
            self.unreachable_since = since
            logger.warning("AppCore %s: its agent is unreachable since %s", self.task_id,
                           time.strftime("%H:%M:%S", time.localtime(since)))

    def mark_reachable(self) -> None:
        """Its task was heard of again."""
        if self.unreachable_since is not None:
            logger.info("AppCore %s: its agent came back", self.task_id)
        self.unreachable_since = None

    def called_framework(self) -> None:
        """AppCore called the framework just now."""
        self.heard_at = time.time()

    def relaunch_on_next_offer(self) -> None:
        """Launch it again on the next offer."""
        self.state = WAITING

    def end(self) -> None:
        """No more launches: the job ended, or AppCore failed past its restarts."""
        self.state = ENDED

    def port_taken(self) -> bool:
        """Its task found the offered port taken: True while that may be retried uncounted."""
        if self._port_retries >= MAX_PORT_RETRIES:
            return False
        self._port_retries += 1
        return True

    def failed(self) -> int:
        """Count one failure of its task; how many there were."""
        self._failures += 1
        return self._failures

    def adopt(self) -> bool:
        """Take over the AppCore the record says runs (a framework failing over on the same
        master): wait for it to attach again instead of launching another. True when there
        was one to adopt."""
        runs = self._store.appcore_runs()
        last = runs[-1] if runs else None
        if last is None or last["state"] not in _ON_AN_AGENT:
            return False
        self.task_id = str(last["task_id"])
        self.agent_id = str(last["agent_id"])
        self.state = RUNNING
        logger.info("adopting AppCore %s (attempt %d)", self.task_id, self.attempt)
        return True

    def lost(self) -> None:
        """The framework was taken away: its task's end is unknown, recorded as killed."""
        if self.live_task_id():
            self._store.update_appcore_run(self.attempt, state="TASK_KILLED",
                                           ended_at=time.time())
        self.state = ENDED
        self._address = ""
