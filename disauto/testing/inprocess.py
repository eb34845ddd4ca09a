"""A whole DisAuto job in this process, for the framework, AppCore and SDK tests.

Everything here is the real code: a :class:`~framework._job.JobController` over a
:class:`~framework._store.JobStore` in a temporary folder, behind the framework's real gRPC server
(:func:`framework._service.make_server`) on a free loopback port; AppCore's real
:class:`~appcore.framework_client.FrameworkClient`, search algorithm,
:class:`~appcore.loop.TrialLoop` and gRPC servicer, put together as ``-m disauto.appcore`` does.

Only Mesos is absent. The tests play the part of the pymesos scheduler by calling the controller's
scheduler-facing API -- ``launch_requests``, ``appcore_launched``, ``trial_launched`` and
``on_status`` with Mesos-shaped ``TaskStatus`` dicts -- which is exactly what
:class:`framework._scheduler.JobScheduler` calls. The real master and agents are exercised by the
local-mode and end-to-end tests.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence
import json
from pathlib import Path
import socket
import threading
import time
from typing import Any
from typing import TypeVar
import uuid

import apprunner_sdk
from disauto.appcore.algorithms import create_algorithm
from disauto.appcore.framework_client import FrameworkClient
from disauto.appcore.loop import TrialLoop
from disauto.appcore.servicer import AppCoreServicer
from disauto.appcore.servicer import make_server as make_appcore_server
from disauto.common import task_env
from disauto.common.space import CategoricalParam
from disauto.common.space import IntParam
from disauto.common.space import RealParam
from disauto.common.space import SearchSpace
from disauto.common.space import space_from_proto
from disauto.common.space import space_to_proto
from disauto.common.task_env import TOKEN_METADATA
from disauto.common.tokens import trial_token
from disauto.framework.record import JobConfig
from disauto.framework.record import JobStore
from disauto.framework.record import TaskResources
from disauto.framework.run import APPCORE_KEY
from disauto.framework.run import JobController
from disauto.framework.run import make_server as make_framework_server
from disauto.framework.run import task_name
from disauto.protos import common_pb2
from disauto.protos import framework_pb2


T = TypeVar("T")

JOB_TOKEN = "job-token-for-tests"
AGENT = "agent-S0"

#: A small mixed space: a log-scale real range, an integer range and a choice.
DEFAULT_SPACE = SearchSpace((
    RealParam("lr", 0.001, 0.1, log=True),
    IntParam("layers", 1, 4),
    CategoricalParam("act", ("relu", "tanh")),
))


def free_port() -> int:
    """A loopback port nobody listens on right now (for servers that take a fixed port)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_for(predicate: Callable[[], T], timeout: float = 5.0, what: str = "") -> T:
    """Poll ``predicate`` until it returns something truthy; fail the test after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what or predicate}")
        time.sleep(0.005)


def job_config(
    *,
    space: SearchSpace = DEFAULT_SPACE,
    tuning_type: str = "random-search",
    max_trials: int = 4,
    parallelism: int = 2,
    objective: str = "accuracy",
    direction: int = common_pb2.MAXIMIZE,
    target: float | None = None,
    max_failed_trials: int = 3,
    seed: int = 7,
    max_appcore_restarts: int = 3,
    max_task_retries: int = 2,
    job_id: str = "job-test",
    settings: Mapping[str, str] | None = None,
    early_stopping: str = "",
    early_stopping_settings: Mapping[str, str] | None = None,
) -> JobConfig:
    """A job as da-submit would build it after validation."""
    search = common_pb2.JobSpec(
        job_id=job_id,
        app_name="tests",
        space=space_to_proto(space),
        tuning_type=tuning_type,
        max_trials=max_trials,
        parallelism=parallelism,
        objective=objective,
        direction=direction,
        max_failed_trials=max_failed_trials,
        seed=seed,
        settings=dict(settings or {}),
        early_stopping=early_stopping,
        early_stopping_settings=dict(early_stopping_settings or {}),
    )
    if target is not None:
        search.target = target
    return JobConfig(
        job_id=job_id,
        app_name="tests",
        launch_cmd="python train.py",
        runner=TaskResources(cpus=1.0, mem_mb=128.0),
        appcore=TaskResources(cpus=0.5, mem_mb=64.0),
        search=search,
        appcore_command="python -m disauto.appcore",
        max_appcore_restarts=max_appcore_restarts,
        max_task_retries=max_task_retries,
    )


def task_status(task_id: str, state: str, *, message: str = "", reason: str = "",
                source: str = "SOURCE_EXECUTOR", agent_id: str = AGENT) -> dict[str, Any]:
    """A Mesos v1 ``TaskStatus`` in the JSON form pymesos hands to ``statusUpdate``."""
    status: dict[str, Any] = {
        "task_id": {"value": task_id},
        "state": state,
        "source": source,
        "agent_id": {"value": agent_id},
        "timestamp": time.time(),
        "uuid": uuid.uuid4().hex,
    }
    if message:
        status["message"] = message
    if reason:
        status["reason"] = reason
    return status


class Framework:
    """The framework side of one job: controller, store and the real gRPC service.

    Args:
        job_dir: where the job's SQLite store lives.
        config: the job.
        log_tail: the controller's stderr reader (default: nothing to read).
    """

    def __init__(self, job_dir: Path, config: JobConfig,
                 log_tail: Callable[[Mapping[str, Any]], str] = lambda status: "",
                 prune_grace: float = 10.0) -> None:
        self.config = config
        self.db_path = job_dir / "job.db"
        self.store = JobStore(self.db_path)
        self.pending_calls = 0
        self.kill_requests: list[str] = []
        self.controller = JobController(config, self.store, JOB_TOKEN,
                                        on_pending=self._on_pending, log_tail=log_tail,
                                        on_kill=self.kill_requests.extend,
                                        prune_grace=prune_grace)
        self.server, port = make_framework_server(self.controller, host="127.0.0.1", port=0)
        self.server.start()
        self.address = f"127.0.0.1:{port}"

    def _on_pending(self) -> None:
        self.pending_calls += 1

    def close(self) -> None:
        self.server.stop(grace=None)
        self.store.close()

    # -- the pymesos scheduler's part ---------------------------------------------------------

    def launch_appcore(self) -> str:
        """Launch the AppCore request (as the scheduler does on an offer); its task id."""
        requests = self.controller.launch_requests()
        assert requests and requests[0].key == APPCORE_KEY, requests
        task_id = self.controller.next_appcore_task_id()
        assert self.controller.appcore_launched(task_id, AGENT)
        self.controller.on_status(task_status(task_id, "TASK_RUNNING"))
        return task_id

    def launch_trials(self) -> list[int]:
        """Launch every pending trial and report it RUNNING; the numbers launched."""
        launched = []
        for request in self.controller.launch_requests():
            if request.trial_number is None:
                continue
            trial = self.controller.trial_for_launch(request.trial_number)
            assert trial is not None
            self.controller.trial_launched(trial.number, task_name(trial.number), AGENT)
            self.controller.on_status(task_status(task_name(trial.number), "TASK_RUNNING"))
            launched.append(trial.number)
        return launched

    def end_trial(self, number: int, state: str = "TASK_FINISHED", **status: Any) -> None:
        self.controller.on_status(task_status(task_name(number), state, **status))

    # -- reading ------------------------------------------------------------------------------

    def states(self) -> dict[int, str]:
        return {t.number: t.state for t in self.controller.trials()}

    def in_flight(self) -> list[int]:
        return [n for n, s in self.states().items() if s in ("PENDING", "LAUNCHING", "RUNNING")]


class AppCore:
    """One AppCore attached to ``framework``: real client, algorithm, loop and servicer.

    ``run()`` starts the trial loop on a thread, as ``-m disauto.appcore`` runs it on its main
    thread. Runners reach it at ``address`` with their trial token.
    """

    def __init__(self, framework_address: str, token: str = JOB_TOKEN, serve: bool = True) -> None:
        self.client = FrameworkClient(framework_address, token, timeout=5.0)
        self.client.wait_ready(timeout=5.0)
        port = free_port()
        self.address = f"127.0.0.1:{port}"
        self.servicer = AppCoreServicer(token)
        self.server = make_appcore_server(self.servicer, "127.0.0.1", port) if serve else None
        reply = self.client.attach(self.address)
        self.spec = reply.spec
        self.history = list(reply.trials)
        self.sequence = reply.sequence
        self.algorithm = create_algorithm(
            self.spec.tuning_type,
            space_from_proto(self.spec.space),
            seed=self.spec.seed,
            direction="minimize" if self.spec.direction == common_pb2.MINIMIZE else "maximize",
            settings=dict(self.spec.settings),
            parallelism=self.spec.parallelism,
        )
        self.algorithm.restore(TrialLoop.records(self.history))
        self.loop = TrialLoop(self.client, self.spec, self.algorithm, self.history)
        self.servicer.set_loop(self.loop)
        if self.server is not None:
            self.server.start()
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="test-appcore", daemon=True)

    def run(self) -> AppCore:
        self._thread.start()
        return self

    def _run(self) -> None:
        try:
            self.loop.run(self.sequence)
        except BaseException as err:  # noqa: BLE001 - reported by join()
            self.error = err

    def join(self, timeout: float = 5.0) -> None:
        """Wait for the loop to return; re-raise what it raised."""
        self._thread.join(timeout)
        assert not self._thread.is_alive(), "the trial loop did not return"
        if self.error is not None:
            raise self.error

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def crash(self) -> None:
        """Die as a killed AppCore process would: connections dropped, nothing said."""
        self.client.close()
        if self.server is not None:
            self.server.stop(grace=None)
        self._thread.join(5.0)

    def close(self) -> None:
        self.client.close()
        if self.server is not None:
            self.server.stop(grace=None)
        self._thread.join(5.0)


class RunningJob:
    """A framework with an AppCore launched as ``appcore-1``, attached and running its loop,
    and its first ``parallelism`` trials launched and RUNNING: what a runner finds.

    Args:
        job_dir: where the job's store lives.
        **config: :func:`job_config` arguments.
    """

    def __init__(self, job_dir: Path, **config: Any) -> None:
        self.framework = Framework(job_dir, job_config(**config))
        self.framework.launch_appcore()
        self.appcore = AppCore(self.framework.address).run()
        parallelism = self.framework.config.search.parallelism
        wait_for(lambda: len(self.framework.in_flight()) == parallelism,
                 what=f"{parallelism} trials")
        self.framework.launch_trials()

    def enter_trial(self, monkeypatch: Any, number: int, *, appcore: str | None = None,
                    token: str | None = None) -> None:
        """Set the environment the framework gives trial ``number``'s task; reset the SDK."""
        trial = {t.number: t for t in self.framework.controller.trials()}[number]
        monkeypatch.setenv(task_env.TRIAL_NUMBER, str(number))
        monkeypatch.setenv(task_env.TRIAL_TOKEN, token or trial_token(JOB_TOKEN, number))
        monkeypatch.setenv(task_env.PARAMS, json.dumps(trial.assignment))
        monkeypatch.setenv(task_env.APPCORE_ADDR, appcore or self.appcore.address)
        monkeypatch.setenv(task_env.FRAMEWORK_ADDR, self.framework.address)
        apprunner_sdk._reset_for_tests()

    def close(self) -> None:
        if self.framework.controller.outcome is None:
            self.framework.controller.finish(framework_pb2.STOPPED, "test teardown")
        self.appcore.close()
        self.framework.close()


def trial_metadata(token: str) -> Sequence[tuple[str, str]]:
    return ((TOKEN_METADATA, token),)

