"""The embedded master's SUBSCRIBE, disconnections and failover timers.

The master's ``subscriptions`` part (:mod:`localmesos.master.parts`). Invariants it keeps, under
the master's lock:

* A framework is ``connected`` exactly while ``subscription`` is its one open stream; a new
  SUBSCRIBE with its id fails the old stream over (ERROR "Framework failed over") first.
* A disconnected framework has no offers and, unless its ``failover_timeout`` is beyond what a
  timer can wait for, a ``failover_deadline``; the timer thread removes it once that passes.
* A removed framework's id never subscribes again ("Framework has been removed").
* A known framework's principal never changes: a SUBSCRIBE with its id and another principal
  (or none) is refused with an ERROR and does not fail the framework over (Mesos
  ``validateUpdate``); its user and checkpointing are kept from the first subscription.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
import copy
import logging
import socket
import threading
import time
from typing import Any

from disauto.localmesos.master import offer_constraints
from disauto.localmesos.master import validation
from disauto.localmesos.master.authorizer import framework_roles
from disauto.localmesos.master.parts import MasterParts
from disauto.localmesos.master.records import MASTER_CAPABILITIES
from disauto.localmesos.master.records import MAX_TIMER
from disauto.localmesos.master.records import MESOS_VERSION
from disauto.localmesos.master.records import FrameworkRecord
from disauto.localmesos.master.records import id_value
from disauto.localmesos.master.state import MasterState
from disauto.localmesos.protocol.recordio import Subscription


logger = logging.getLogger("disauto.localmesos.master")


class Subscriptions:
    """SUBSCRIBE, failover, disconnection and the failover timers (part of :class:`Master`)."""

    def __init__(self, state: MasterState, parts: MasterParts) -> None:
        self.state = state
        self.parts = parts
        self._timer_cond = threading.Condition(state.lock)
        self._timer_thread = threading.Thread(
            target=self._timer_loop, name="localmesos-master-timers", daemon=True
        )

    def start_timers(self) -> None:
        """Start the failover timers' thread."""
        self._timer_thread.start()

    def stop_timers(self) -> None:
        """Wake the timers' thread to see ``state.stopped`` (set first), and join it."""
        with self.state.lock:
            self._timer_cond.notify_all()
        if self._timer_thread.is_alive():
            self._timer_thread.join()

    def master_info(self) -> dict[str, Any]:
        """The ``MasterInfo`` of SUBSCRIBED events and ``/master/state``'s ``leader_info``."""
        try:
            ip = int.from_bytes(socket.inet_aton(self.state.hostname), "little")
        except OSError:
            ip = 0
        return {
            "id": self.state.master_id,
            "ip": ip,
            "port": self.state.port,
            "pid": self.state.pid,
            "hostname": self.state.hostname,
            "version": MESOS_VERSION,
            "address": {"hostname": self.state.hostname, "ip": self.state.hostname,
                        "port": self.state.port},
            "capabilities": [{"type": c} for c in MASTER_CAPABILITIES],
        }

    def _new_subscription(self, framework_id: str) -> Subscription:
        return Subscription(framework_id, self.state.heartbeat_interval, self.state.observers)

    def subscribe(self, call: Mapping[str, Any]) -> Subscription:
        """Handle a (validated) SUBSCRIBE call and return its event stream.

        A framework the master refuses (invalid FrameworkInfo, removed id) gets a stream that
        holds one ERROR event and is already closed, as Mesos answers 200 and then ERROR.
        """
        info = copy.deepcopy(dict(call["subscribe"]["framework_info"]))
        suppressed = set(call["subscribe"].get("suppressed_roles", []))
        error = validation.validate_framework_info(info)
        constraints = copy.deepcopy(dict(call["subscribe"].get("offer_constraints", {})))
        compiled, constraints_error = offer_constraints.compile_or_error(constraints)
        error = error or constraints_error or self._registration_unauthorized(info)
        with self.state.lock:
            registered = "id" in info
            self.state.count(
                "messages_reregister_framework" if registered else "messages_register_framework"
            )
            if self.state.stopped:
                error = error or "Master is shutting down"
            fid = id_value(info.get("id"))
            if error is None and fid is not None and fid in self.state.removed_ids:
                error = "Framework has been removed"
            if error is not None:
                return self._refused_subscription(fid, info, error)
            if fid is None:
                fid = f"{self.state.master_id}-{self.state.next_framework:04d}"
                self.state.next_framework += 1
                info["id"] = {"value": fid}
            existing = self.state.frameworks.get(fid)
            if existing is not None:
                error = _update_error(existing.info, info)
                if error is not None:
                    return self._refused_subscription(fid, info, error)
            sub = self._new_subscription(fid)
            if existing is None:
                fw = self.add_framework(fid, info, recovered=registered)
            else:
                fw = existing
                self._fail_over(fw, info)
            fw.offer_constraints, fw.constraints_filter = constraints, compiled
            self._attach(fw, sub, suppressed)
            if existing is not None:
                # The agents send the updates still unacknowledged again, on the new stream.
                for record in self.state.agents.values():
                    record.link.post("resend_unacknowledged", fid)
        self.state.loop.trigger()
        return sub

    def _registration_unauthorized(self, info: Mapping[str, Any]) -> str | None:
        """Mesos' ``checkSubscribeAuthorization``: the ERROR of a framework whose principal
        the ``register_frameworks`` ACLs do not allow all its roles, or None."""
        roles = framework_roles(info)
        if self.state.acls.may_register(info.get("principal"), roles):
            return None
        # stringify(FrameworkID) of a new framework is "", and of a set of roles "{ a, b }".
        return (f"Not authorized to register framework {id_value(info.get('id')) or ''} "
                f"with roles {{ {', '.join(roles)} }}")

    def _refused_subscription(
        self, fid: str | None, info: Mapping[str, Any], error: str
    ) -> Subscription:
        """A stream that carries only the ERROR of a refused SUBSCRIBE, already closed."""
        sub = self._new_subscription(fid or "")
        sub.send({"type": "ERROR", "error": {"message": error}})
        sub.close()
        logger.info("Refused subscription of framework %r: %s", info.get("name"), error)
        return sub

    def add_framework(
        self, fid: str, info: dict[str, Any], *, recovered: bool
    ) -> FrameworkRecord:
        """Register a framework the master does not know; ``recovered`` when it came with its
        id (it subscribed to an earlier master)."""
        now = time.time()
        fw = FrameworkRecord(
            framework_id=fid,
            info=info,
            roles=validation.framework_roles(info),
            capabilities={c.get("type", "") for c in info.get("capabilities", [])},
            registered_time=now,
        )
        fw.completed_tasks = deque(maxlen=self.state.max_completed_tasks_per_framework)
        if recovered:
            fw.reregistered_time = now
        self.state.frameworks[fid] = fw
        logger.info("Framework %s (%s) subscribed", fid, fw.name)
        return fw

    def _fail_over(self, fw: FrameworkRecord, info: dict[str, Any]) -> None:
        """A known framework subscribes again: its old stream ends with an ERROR and its
        outstanding offers are discarded (without RESCIND)."""
        old = fw.subscription
        if old is not None:
            old.send({"type": "ERROR", "error": {"message": "Framework failed over"}})
            old.close()
        for offer in list(fw.offers.values()):
            self.parts.tasks.remove_offer(offer)
        self.apply_framework_info(fw, info)
        fw.reregistered_time = time.time()
        logger.info("Framework %s (%s) re-subscribed", fw.framework_id, fw.name)

    def _attach(self, fw: FrameworkRecord, sub: Subscription, suppressed: set[str]) -> None:
        """Make ``sub`` the framework's stream and open it with SUBSCRIBED and a HEARTBEAT."""
        # A subscribe (re)sets the suppressed roles; pymesos never sends any, so this
        # revives every role and clears the filters of those that were suppressed.
        revived = fw.suppressed_roles - suppressed
        fw.suppressed_roles = suppressed & set(fw.roles)
        if revived:
            self.state.filters.clear(fw.framework_id, revived)
        fw.subscription = sub
        fw.connected = True
        fw.failover_deadline = None
        fw.count("subscribed")
        sub.send(
            {
                "type": "SUBSCRIBED",
                "subscribed": {
                    "framework_id": {"value": fw.framework_id},
                    "heartbeat_interval_seconds": float(self.state.heartbeat_interval),
                    "master_info": self.master_info(),
                },
            }
        )
        sub.send({"type": "HEARTBEAT"})

    def apply_framework_info(self, fw: FrameworkRecord, info: dict[str, Any]) -> None:
        """Take a new FrameworkInfo, keeping the immutable fields (user, principal, checkpoint)."""
        new = copy.deepcopy(info)
        for key in ("user", "principal", "checkpoint"):
            if key in fw.info:
                new[key] = fw.info[key]
            else:
                new.pop(key, None)
        new["id"] = {"value": fw.framework_id}
        old_roles = set(fw.roles)
        fw.info = new
        fw.roles = validation.framework_roles(new)
        fw.capabilities = {c.get("type", "") for c in new.get("capabilities", [])}
        dropped = old_roles - set(fw.roles)
        if dropped:
            for offer in [o for o in fw.offers.values() if o.role in dropped]:
                self.parts.tasks.rescind(offer)
            self.state.filters.clear(fw.framework_id, dropped)

    def subscription_closed(self, sub: Subscription) -> None:
        """The HTTP layer reports that a subscription's connection is gone."""
        with self.state.lock:
            fw = self.state.frameworks.get(sub.framework_id)
            if fw is None or fw.subscription is not sub:
                return
            self._disconnect(fw)

    def _disconnect(self, fw: FrameworkRecord) -> None:
        """The framework's stream is gone: rescind its offers and start its failover timer."""
        fw.subscription = None
        fw.connected = False
        for offer in list(fw.offers.values()):
            self.parts.tasks.rescind(offer)
        timeout = float(fw.info.get("failover_timeout", 0.0))
        if self.state.max_failover_timeout is not None:
            timeout = min(timeout, self.state.max_failover_timeout)
        timeout = max(0.0, timeout)
        logger.info(
            "Framework %s (%s) disconnected; failover timeout %gs", fw.framework_id, fw.name,
            timeout,
        )
        if timeout <= MAX_TIMER:
            fw.failover_deadline = time.monotonic() + timeout
        self._timer_cond.notify_all()

    def _timer_loop(self) -> None:
        """The timer thread: remove each disconnected framework when its deadline passes."""
        with self.state.lock:
            while not self.state.stopped:
                now = time.monotonic()
                deadlines = [
                    fw.failover_deadline
                    for fw in self.state.frameworks.values()
                    if fw.failover_deadline is not None and not fw.connected
                ]
                for fw in list(self.state.frameworks.values()):
                    if (
                        not fw.connected
                        and fw.failover_deadline is not None
                        and fw.failover_deadline <= now
                    ):
                        logger.info(
                            "Framework %s (%s) failover timeout expired",
                            fw.framework_id,
                            fw.name,
                        )
                        self.parts.tasks.remove_framework(fw)
                pending = [d for d in deadlines if d > now]
                self._timer_cond.wait(min(pending) - now if pending else None)


def _update_error(old: Mapping[str, Any], new: dict[str, Any]) -> str | None:
    """Why a known framework may not take ``new`` on a re-SUBSCRIBE, or None.

    As Mesos' ``_subscribe``: the user and checkpointing are first taken from the framework's
    current info (they cannot change and are not an error), then the update is validated, so
    only a changed principal is refused here.
    """
    for key in ("user", "checkpoint"):
        if key in old:
            new[key] = old[key]
        else:
            new.pop(key, None)
    return validation.validate_framework_update(old, new)
