"""A tiny custom executor on pymesos' real ``MesosExecutorDriver``, run by the tests as a CUSTOM
executor's command (``python executor_program.py``).

Each task's ``data`` is base64 JSON ``{"action": ...}``:

* ``finish``: TASK_RUNNING (``data`` = this process' pid), then TASK_FINISHED after
  ``seconds`` (default 0).
* ``hang``: TASK_RUNNING, then nothing until KILL, which answers TASK_KILLED.
* ``crash``: TASK_RUNNING, then the process exits with status ``code`` (default 3).
* ``message``: sends the framework ``text`` as a MESSAGE, then TASK_FINISHED.

A framework MESSAGE is echoed back prefixed with ``echo:``. SHUTDOWN writes ``shutdown`` to
the sandbox and lets pymesos end the process. Every callback is logged to stdout.
"""

from __future__ import annotations

import base64
import json
import os
import sys
import threading
import time
from typing import Any

from pymesos import Executor
from pymesos import MesosExecutorDriver


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def _log(*args: Any) -> None:
    print(*args, flush=True)


class TestExecutor(Executor):  # type: ignore[misc]
    def registered(self, driver: Any, executor_info: Any, framework_info: Any,
                   agent_info: Any) -> None:
        _log("registered", executor_info["executor_id"]["value"], os.getpid())

    def _status(self, driver: Any, task_id: Any, state: str, **extra: Any) -> None:
        driver.sendStatusUpdate(dict(task_id=task_id, state=state, **extra))

    def launchTask(self, driver: Any, task: Any) -> None:  # noqa: N802 - pymesos API
        spec = json.loads(base64.b64decode(task.get("data") or _b64("{}")) or b"{}")
        action = spec.get("action", "finish")
        task_id = task["task_id"]
        _log("launch", task_id["value"], action)
        self._status(driver, task_id, "TASK_RUNNING", data=_b64(str(os.getpid())))

        def work() -> None:
            if action == "finish":
                time.sleep(float(spec.get("seconds", 0)))
                self._status(driver, task_id, "TASK_FINISHED")
            elif action == "crash":
                time.sleep(0.2)
                os._exit(int(spec.get("code", 3)))
            elif action == "message":
                driver.sendFrameworkMessage(_b64(spec.get("text", "")))
                self._status(driver, task_id, "TASK_FINISHED")

        threading.Thread(target=work, daemon=True).start()

    def killTask(self, driver: Any, task_id: Any) -> None:  # noqa: N802 - pymesos API
        _log("kill", task_id["value"])
        self._status(driver, task_id, "TASK_KILLED", message="killed by the test executor")

    def frameworkMessage(self, driver: Any, message: str) -> None:  # noqa: N802
        text = base64.b64decode(message).decode()
        _log("message", text)
        driver.sendFrameworkMessage(_b64(f"echo:{text}"))

    def shutdown(self, driver: Any) -> None:
        _log("shutdown")
        with open("shutdown", "w", encoding="utf-8") as marker:
            marker.write("shutdown\n")

    def error(self, driver: Any, message: str) -> None:
        _log("error", message)


def main() -> int:
    driver = MesosExecutorDriver(TestExecutor())
    driver.run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
