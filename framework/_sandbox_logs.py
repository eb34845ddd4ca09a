"""Read the tail of a task's stderr through the agent's HTTP API, as the Mesos web UI does.

The agent's address comes from the offer's ``url`` (``http://ip:port/slave(1)``); its ``/state``
gives the executor's sandbox directory, and ``/files/read`` its files. Works the same against a
real Mesos agent and the embedded one. Best effort: any failure gives "".

Every read carries the job's agent credentials (``--agent-principal``, by default the
framework's ``--principal``) as HTTP basic auth when it has some: an agent with
``--authenticate_http_readonly`` answers 401 to a read without them.
"""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Mapping
import json
import logging
import threading
from typing import Any
from urllib.error import HTTPError
from urllib.parse import urlencode

from disauto.common import slots
from disauto.common.kept_http import KeptConnections
from disauto.common.master_http import master_request


logger = logging.getLogger(__name__)


class SandboxLogs:
    """Remembers agents' endpoints from offers and reads task files through them.

    Args:
        max_bytes: how much of the end of stderr to read.
        timeout: per HTTP request, in seconds.
        endpoints: agent id → endpoint already known (a record's).
        auth: (principal, secret) sent with every read, for agents that authenticate reads.
    """

    def __init__(self, max_bytes: int = 2000, timeout: float = 5.0,
                 endpoints: Mapping[str, str] | None = None,
                 auth: tuple[str, str] | None = None) -> None:
        self._auth = auth
        self._agents: dict[str, str] = dict(endpoints or {})
        self._lock = threading.Lock()
        self._max_bytes = max_bytes
        self._timeout = timeout
        self._http = KeptConnections()

    def remember(self, offers: Iterable[Mapping[str, Any]]) -> None:
        """Record the agent endpoint of each offer (``url.address`` + ``url.path``)."""
        for offer in offers:
            url = offer.get("url") or {}
            address = url.get("address") or {}
            host = address.get("ip") or address.get("hostname")
            port = address.get("port")
            if not host or not port:
                continue
            base = f"{url.get('scheme', 'http')}://{host}:{port}"
            with self._lock:
                self._agents[str(offer["agent_id"]["value"])] = base + str(url.get("path", ""))

    def endpoints(self) -> dict[str, str]:
        """Agent id → its endpoint, as learnt from offers (kept in the job's record, so that
        ``da-job logs`` reads a live task's files when no framework runs)."""
        with self._lock:
            return dict(self._agents)

    def read_from(self, root: str, path: str, offset: int,
                  most: int = 1 << 20) -> tuple[str, int]:
        """What ``path`` holds from ``offset`` on (at most ``most`` bytes, the end of a larger
        remainder), through ``/files/read``: (text, the offset to read from next).

        The agent returns exactly ``length`` bytes below the size it reports, so the offset
        advances by the bytes asked for, not by the decoded text's length.
        """
        size = int(self.get_json(f"{root}/files/read?" + urlencode(
            {"path": path, "offset": -1}))["offset"])
        if size <= offset:
            return "", offset
        offset = max(offset, size - most)
        data = self.get_json(f"{root}/files/read?" + urlencode(
            {"path": path, "offset": offset, "length": size - offset}))["data"]
        return str(data), size

    def get_json(self, url: str, timeout: float | None = None) -> Any:
        """GET an agent URL (with the job's agent credentials) and parse its JSON answer, on a
        kept-alive connection (the log collector reads two or three files a trial)."""
        request = master_request(url, *(self._auth or ()))
        body = self._http.get(url, dict(request.header_items()),
                              self._timeout if timeout is None else timeout)
        return json.loads(body.decode("utf-8", "replace"))

    def close(self) -> None:
        """Close the kept connections."""
        self._http.close()

    def executor_sandboxes(self, agent_id: str, framework_id: str) -> dict[str, tuple[str, str]]:
        """Executor id → (files base URL, sandbox directory) of every executor of the framework
        on the agent, live or completed, from one ``/state``; empty when the agent's endpoint
        is not known.

        Raises:
            OSError, ValueError: the agent did not answer, or not with JSON.
        """
        with self._lock:
            endpoint = self._agents.get(agent_id, "")
        if not endpoint:
            return {}
        state = self.get_json(endpoint + "/state")
        root = endpoint.rsplit("/", 1)[0] if "(" in endpoint else endpoint
        found: dict[str, tuple[str, str]] = {}
        for key in ("frameworks", "completed_frameworks"):
            for framework in state.get(key, []):
                if framework.get("id") != framework_id:
                    continue
                for ekey in ("executors", "completed_executors"):
                    for executor in framework.get(ekey, []):
                        if executor.get("id") and executor.get("directory"):
                            found.setdefault(str(executor["id"]),
                                             (root, str(executor["directory"])))
        return found

    def sandbox(self, agent_id: str, framework_id: str, executor_id: str) -> tuple[str, str]:
        """(files base URL, sandbox directory) of an executor, or ("", "")."""
        return self.executor_sandboxes(agent_id, framework_id).get(executor_id, ("", ""))

    def task_sandbox(self, agent_id: str, framework_id: str, task_id: str,
                     slot: str = "") -> tuple[str, str]:
        """(files base URL, sandbox directory) of a task: a command task's executor is named
        after it; a warm slot's task has its own folder in the slot executor's sandbox."""
        return task_sandbox_in(self.executor_sandboxes(agent_id, framework_id), task_id, slot)

    def tail(self, status: Mapping[str, Any], framework_id: str, name: str = "stderr",
             slot: str = "") -> str:
        """The last lines of the task's ``name`` file (stderr), "" if it cannot be read.

        ``slot``: the warm slot's executor that ran the task, if any. A task of a slot that
        wrote nothing there (its folder was never made: the slot's executor failed before it
        ran the task, or it died while the task ran) is answered with the end of the slot
        executor's own ``name`` file, introduced as such: that is why it failed."""
        agent_id = str((status.get("agent_id") or {}).get("value", ""))
        task_id = str((status.get("task_id") or {}).get("value", ""))
        executor_id = slot or str((status.get("executor_id") or {}).get("value", "")) or task_id
        try:
            executors = self.executor_sandboxes(agent_id, framework_id)
            root, directory = (task_sandbox_in(executors, task_id, slot) if slot
                               else executors.get(executor_id, ("", "")))
            text = self._last_lines(root, f"{directory}/{name}") if directory else ""
            if not text and slot:
                root, directory = executors.get(slot, ("", ""))
                text = self._last_lines(root, f"{directory}/{name}") if directory else ""
                return f"(its slot's executor {slot}) {text}" if text else ""
        except Exception as err:  # noqa: BLE001 - best effort
            logger.debug("cannot read %s of %s: %s", name, executor_id, err)
            return ""
        return text

    def _last_lines(self, root: str, path: str) -> str:
        """The last five non-blank lines of a sandbox file, joined with `` | ``; "" when the
        file is empty or missing."""
        try:
            size = int(self.get_json(f"{root}/files/read?" + urlencode(
                {"path": path, "offset": -1}))["offset"])
        except HTTPError as err:
            if err.code == 404:  # not there (yet)
                return ""
            raise
        offset = max(0, size - self._max_bytes)
        data = self.get_json(f"{root}/files/read?" + urlencode(
            {"path": path, "offset": offset, "length": self._max_bytes}))["data"]
        lines = [line for line in str(data).splitlines() if line.strip()]
        return " | ".join(lines[-5:])[-self._max_bytes:]


def task_sandbox_in(executors: Mapping[str, tuple[str, str]], task_id: str,
                    slot: str = "") -> tuple[str, str]:
    """A task's (files base URL, sandbox directory) among ``executors`` (as
    :meth:`SandboxLogs.executor_sandboxes` gives them), ("", "") when its executor is not
    there."""
    if not slot:
        return executors.get(task_id, ("", ""))
    root, directory = executors.get(slot, ("", ""))
    return (root, f"{directory}/{slots.task_sandbox(task_id)}") if directory else ("", "")
