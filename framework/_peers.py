"""Jobs' standings exchanged through the Mesos master alone (the deadline policy).

Each job publishes its :class:`~framework.policies.deadline.Standing` as the FrameworkInfo label
:data:`STANDING_LABEL` (JSON) with an ``UPDATE_FRAMEWORK`` call (Mesos >= 1.9; pymesos 0.3 has
no method for it, so the call goes through the driver's own connection, ``_send``, and the
driver's FrameworkInfo is updated too so that a re-subscription carries the label), and reads
the others' from the master's read-only ``/master/frameworks``. No channel between frameworks
but the master: what works on the embedded master works on a real one.

A :class:`PeerBoard` does both every ``interval`` seconds on a thread of its own, never in the
pymesos IO thread; the policy reads :meth:`PeerBoard.standings`, at most ``interval`` old.
Standings older than ``stale_after`` seconds are dropped (a job that stopped publishing).
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Mapping
import json
import logging
import threading
import time
from typing import Any
from urllib.request import urlopen

from disauto.common.master_http import master_request
from disauto.framework.policies import Standing


logger = logging.getLogger(__name__)

STANDING_LABEL = "disauto.standing"


def standings_from_frameworks(body: Mapping[str, Any], own_id: str, now: float,
                              stale_after: float) -> list[Standing]:
    """The standings other active frameworks publish in a ``/master/frameworks`` answer."""
    found: list[Standing] = []
    for framework in body.get("frameworks", []) or []:
        if not isinstance(framework, dict) or framework.get("id") == own_id or \
                not framework.get("active", True):
            continue
        for label in framework.get("labels", []) or []:
            if not isinstance(label, dict) or label.get("key") != STANDING_LABEL:
                continue
            try:
                standing = Standing.from_json(json.loads(str(label.get("value", ""))))
            except (ValueError, TypeError):
                continue
            if now - standing.updated <= stale_after:
                found.append(replace_job(standing, str(framework.get("id", ""))))
    return found


def replace_job(standing: Standing, framework_id: str) -> Standing:
    """``standing`` named by its framework id when it carries no job name."""
    if standing.job:
        return standing
    return Standing.from_json({**standing.to_json(), "job": framework_id})


def with_label(info: Mapping[str, Any], value: str) -> dict[str, Any]:
    """A copy of FrameworkInfo ``info`` with :data:`STANDING_LABEL` set to ``value``."""
    labels = [label for label in (info.get("labels") or {}).get("labels", [])
              if label.get("key") != STANDING_LABEL]
    return {**info, "labels": {"labels": [*labels, {"key": STANDING_LABEL, "value": value}]}}


class PeerBoard:
    """Publishes this job's standing and reads the others' (see the module docstring).

    Args:
        standing: this job's current standing (the policy's).
        driver: the pymesos driver, once there is one.
        master: the master's ``host:port`` (HTTP), once known.
        framework_id: this framework's id, once subscribed.
        auth: (principal, secret) for a master whose read-only endpoints need them
            (``--authenticate_http_readonly``); None sends none.
    """

    def __init__(self, standing: Callable[[], Standing], driver: Callable[[], Any],
                 master: Callable[[], str], framework_id: Callable[[], str], *,
                 auth: tuple[str, str] | None = None,
                 interval: float = 1.0, stale_after: float = 15.0) -> None:
        self._standing = standing
        self._driver = driver
        self._master = master
        self._framework_id = framework_id
        self._auth = auth
        self._interval = interval
        self._stale_after = stale_after
        self._peers: tuple[Standing, ...] = ()
        self._published = ""
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="peer-board", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(5.0)

    def standings(self) -> tuple[Standing, ...]:
        with self._lock:
            return self._peers

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                self.publish()
                self.read()
            except Exception:  # noqa: BLE001 - a peer board never stops the job
                logger.debug("peer board round failed", exc_info=True)

    def publish(self) -> None:
        """Send this job's standing in an UPDATE_FRAMEWORK when it changed (or went stale)."""
        driver, framework_id = self._driver(), self._framework_id()
        if driver is None or not framework_id:
            return
        standing = self._standing().to_json()
        key = json.dumps({**standing, "updated": 0}, sort_keys=True)
        stale = time.time() - float(json.loads(self._published or "{}").get("at", 0)) > \
            self._stale_after / 3
        if key == json.loads(self._published or '{"key": ""}').get("key") and not stale:
            return
        value = json.dumps({**standing, "updated": time.time()})
        driver._framework = with_label(driver._framework, value)  # noqa: SLF001 - see module doc
        driver._send({  # noqa: SLF001 - pymesos 0.3 has no updateFramework
            "type": "UPDATE_FRAMEWORK", "framework_id": {"value": framework_id},
            "update_framework": {"framework_info": driver.framework},
        })
        self._published = json.dumps({"key": key, "at": time.time()})

    def read(self) -> None:
        """Refresh the other frameworks' standings from the master."""
        master = self._master()
        if not master:
            return
        request = master_request(f"http://{master}/master/frameworks", *(self._auth or ()))
        with urlopen(request, timeout=5.0) as response:  # noqa: S310 - the master's URL
            body = json.loads(response.read())
        peers = standings_from_frameworks(body, self._framework_id(), time.time(),
                                          self._stale_after)
        with self._lock:
            self._peers = tuple(peers)
