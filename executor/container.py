"""A warm slot's container: one long-lived container per slot, each trial ``docker exec``'d in it.

With ``da-submit --docker-image`` a warm slot is one container that runs many trials, as Mesos'
own docker executor keeps a container for its task: the executor runs on the agent's host and
owns the container (design (b) of docs/warm-slots.md). It talks to the agent's Docker engine
through the ``docker`` package (the Engine API), as the embedded agent's containerizer does:

* **Started once**, at the slot's first trial, from the image of :data:`SPEC_ENV` (pulled when
  missing, or always with ``force_pull``): the executor's sandbox bind-mounted at
  ``/mnt/mesos/sandbox``, the job's host folders (``--output``) at the same paths, host
  networking, the engine's init (tini) as PID 1, and the slot's resources (the executor's plus
  its trial's) as limits: CPU shares (1024 per CPU) and a CFS quota, a hard memory limit with no
  swap. A later trial that needs more raises the limits (``docker update``); they never shrink
  while the slot lives (Mesos would shrink them when a task ends). Its GPUs are the executor's
  (``CUDA_VISIBLE_DEVICES`` the agent set): one NVIDIA device request for exactly those, named
  in ``NVIDIA_VISIBLE_DEVICES``; without GPUs ``NVIDIA_VISIBLE_DEVICES=void``.
* **Tied to the executor.** Its main process is a shell reading its stdin, which the executor
  holds attached: when the executor dies, even by ``kill -9``, the engine closes that stdin,
  the shell ends, the container's PID namespace (every trial) goes with it, and the engine
  removes it (``--rm``). SHUTDOWN removes it at once. A container that ends while the slot lives
  (``docker kill``, an engine restart) ends the executor (exit status
  :data:`CONTAINER_LOST_EXIT`), so the agent fails its live trial with
  REASON_EXECUTOR_TERMINATED: the framework retries it as a lost trial.
* **A trial** is ``docker exec`` of ``/bin/sh -c '<launch command>'`` (its own session and
  process group: the engine's runtime makes every exec a session leader), working directory its
  own sandbox ``/mnt/mesos/sandbox/tasks/<task id>``, output appended to ``stdout``/``stderr``
  there, environment only what a container task gets (Mesos' ids, ``MESOS_SANDBOX``, the
  trial's own), never the agent's. :class:`ContainerTaskProcess` has
  :class:`executor.process.TaskProcess`'s interface (pid, wait, poll, kill): its ``pid`` is the
  exec's process on the host, and a kill signals that process group from the host (SIGTERM,
  grace, SIGKILL). An exit by a signal is reported as the engine reports it, ``128 + n``, which
  :meth:`ContainerTaskProcess.wait` turns back into ``-n``.

It needs the engine on the same host as the executor (the host PID of an exec is meaningless
elsewhere), as the embedded agents have it.
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Sequence
import logging
import os
from pathlib import Path
import signal
import threading
import time
from typing import Any
import uuid

from disauto.common.slots import SPEC_ENV
from disauto.common.slots import ContainerSpec
from disauto.common.slots import ContainerSpecError


logger = logging.getLogger("disauto.executor")

SANDBOX_PATH = "/mnt/mesos/sandbox"
CONTAINER_LOST_EXIT = 70
"""The executor's exit status when its container ended under it."""
CPU_SHARES_PER_CPU = 1024
MIN_CPU_SHARES = 2
MIN_MEMORY_MB = 32.0
CFS_PERIOD_US = 100_000
LOST_WAIT = 2.0
"""How long a trial killed by SIGKILL that nobody killed waits to learn whether its container
ended (then it is the slot's loss, not the trial's failure)."""
INSTALL_HINT = "pip install 'disauto[docker]'"
KEEP_ALIVE = "while read -r _; do :; done"
"""The container's main process: it ends when its stdin (the executor's attachment) closes."""


class ContainerError(Exception):
    """The slot's container cannot be had or used; the message is one line saying why."""


def spec_from_environment(env: Mapping[str, str] | None = None) -> ContainerSpec | None:
    """The slot's container spec, or None for a slot that runs trials as host processes.

    Raises:
        ContainerError: naming what is wrong with it.
    """
    text = (os.environ if env is None else env).get(SPEC_ENV, "")
    try:
        return ContainerSpec.from_json(text) if text else None
    except ContainerSpecError as exc:
        raise ContainerError(str(exc)) from None


def _reason(exc: BaseException) -> str:
    text = getattr(exc, "explanation", None) or str(exc) or type(exc).__name__
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    return " ".join(str(text).split())


def _is_not_found(exc: BaseException) -> bool:
    from docker.errors import NotFound

    return isinstance(exc, NotFound) or "No such container" in _reason(exc)


def _engine_errors() -> tuple[type[BaseException], ...]:
    from docker.errors import DockerException
    from requests.exceptions import RequestException

    return (DockerException, RequestException, OSError)


def task_limits(resources: Sequence[Mapping[str, Any]]) -> tuple[float, float]:
    """(cpus, mem MB) of a TaskInfo's resources (unparseable entries count as nothing)."""
    cpus = mem = 0.0
    for resource in resources:
        value = (resource.get("scalar") or {}).get("value")
        if not isinstance(value, (int, float)):
            continue
        if resource.get("name") == "cpus":
            cpus += float(value)
        elif resource.get("name") == "mem":
            mem += float(value)
    return cpus, mem


def visible_gpus(env: Mapping[str, str]) -> tuple[str, ...]:
    """The executor's GPUs as the agent named them (``CUDA_VISIBLE_DEVICES``)."""
    text = env.get("CUDA_VISIBLE_DEVICES", "").strip()
    return tuple(part for part in (p.strip() for p in text.split(",")) if part)


class SlotContainer:
    """The slot's one container (created at the first trial).

    Args:
        spec: the framework's container settings.
        sandbox: the executor's sandbox (mounted at ``/mnt/mesos/sandbox``).
        on_lost: called when the container ends while the slot lives (default: log and end
            the executor with :data:`CONTAINER_LOST_EXIT`).
    """

    def __init__(self, spec: ContainerSpec, sandbox: Path,
                 on_lost: Any = None) -> None:
        self.spec = spec
        self.sandbox = sandbox
        self._on_lost = on_lost or _end_executor
        self._lock = threading.Lock()
        self._client: Any = None
        self._api_version = ""
        self.id = ""
        self.name = ""
        self._limits = (0.0, 0.0)
        self._closing = threading.Event()
        self.gone = threading.Event()
        """Set once the container ended (or was removed)."""
        self._stdin: Any = None

    # -- the container ----------------------------------------------------------------------

    def ensure(self, cpus: float, mem_mb: float) -> None:
        """Create and start the container for a trial of ``cpus`` and ``mem_mb`` (at the first
        trial), or raise its limits when the trial needs more than they allow.

        Raises:
            ContainerError: the engine is unreachable, the image cannot be had, or the
                container cannot be started (or ended already).
        """
        want = (cpus + self.spec.executor_cpus, mem_mb + self.spec.executor_mem_mb)
        with self._lock:
            if self.gone.is_set():
                raise ContainerError(f"the slot's container {self.name} has ended")
            if not self.id:
                self._create(*want)
                self._limits = want
            elif want[0] > self._limits[0] or want[1] > self._limits[1]:
                grown = (max(want[0], self._limits[0]), max(want[1], self._limits[1]))
                self._update(*grown)
                self._limits = grown

    def _engine(self) -> Any:
        try:
            import docker
            from docker.errors import DockerException
        except ImportError:
            raise ContainerError(
                f"container slots need the Python package 'docker' on the agent: {INSTALL_HINT}"
            ) from None
        try:
            return docker.APIClient(**docker.utils.kwargs_from_env(),
                                    version=self._api_version or "auto", timeout=60)
        except DockerException as exc:
            where = os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"
            raise ContainerError(f"cannot reach the Docker engine at {where}: "
                                 f"{_reason(exc)}") from None

    def _create(self, cpus: float, mem_mb: float) -> None:
        from docker.types import DeviceRequest

        client = self._engine()
        self._client = client
        self._api_version = client.api_version
        self._ensure_image(client)
        executor_id = os.environ.get("MESOS_EXECUTOR_ID", "slot")
        self.name = f"disauto-{executor_id}-{uuid.uuid4().hex[:8]}"
        gpus = visible_gpus(os.environ)
        host_config: dict[str, Any] = {
            "binds": [f"{self.sandbox}:{SANDBOX_PATH}:rw",
                      *(f"{path}:{path}:rw" for path in self.spec.host_paths)],
            "network_mode": "host", "init": True, "auto_remove": True,
            **_limit_kwargs(cpus, mem_mb),
        }
        if gpus:
            host_config["device_requests"] = [DeviceRequest(
                driver="nvidia", device_ids=list(gpus), capabilities=[["gpu"]])]
        environment = {
            "MESOS_SANDBOX": SANDBOX_PATH,
            "NVIDIA_VISIBLE_DEVICES": ",".join(gpus) if gpus else "void",
        }
        user = None if os.geteuid() == 0 else f"{os.geteuid()}:{os.getegid()}"
        if user is not None:
            environment["HOME"] = SANDBOX_PATH
        labels = {**self.spec.labels, "disauto.slot": executor_id,
                  "localmesos.executor_id": executor_id,
                  "localmesos.framework_id": os.environ.get("MESOS_FRAMEWORK_ID", ""),
                  "localmesos.agent_id": os.environ.get("MESOS_SLAVE_ID", "")}
        errors = _engine_errors()
        try:
            created = client.create_container(
                self.spec.image, command=["/bin/sh", "-c", KEEP_ALIVE], name=self.name,
                # detach=False with stdin_open: the engine closes its stdin when we detach.
                detach=False, stdin_open=True, tty=False, environment=environment,
                working_dir=SANDBOX_PATH, labels=labels, user=user,
                host_config=client.create_host_config(**host_config))
            self.id = str(created["Id"])
            self._stdin = client.attach_socket(self.id, params={"stdin": 1, "stream": 1})
            client.start(self.id)
        except errors as exc:
            self._remove_quietly()
            raise ContainerError(f"cannot start the slot's container from image "
                                 f"'{self.spec.image}': {_reason(exc)}") from None
        threading.Thread(target=self._watch, name=f"watch-{self.name}", daemon=True).start()
        logger.info("slot container %s (%s) started from %s: %g CPUs, %g MB%s", self.name,
                    self.id[:12], self.spec.image, cpus, mem_mb,
                    f", GPUs {','.join(gpus)}" if gpus else "")

    def _ensure_image(self, client: Any) -> None:
        from docker.errors import NotFound
        from docker.utils import parse_repository_tag

        errors = _engine_errors()
        image = self.spec.image
        if not self.spec.force_pull:
            try:
                client.inspect_image(image)
                return
            except NotFound:
                pass
            except errors as exc:
                raise ContainerError(f"cannot inspect image '{image}': {_reason(exc)}") from None
        repository, tag = parse_repository_tag(image)
        logger.info("pulling image %s", image)
        try:
            for line in client.pull(repository, tag=tag or "latest", stream=True, decode=True):
                if isinstance(line, Mapping) and line.get("error"):
                    raise ContainerError(f"image '{image}' is not on this machine and pulling "
                                         f"it failed: {' '.join(str(line['error']).split())}")
        except errors as exc:
            raise ContainerError(f"image '{image}' is not on this machine and pulling it "
                                 f"failed: {_reason(exc)}") from None

    def _update(self, cpus: float, mem_mb: float) -> None:
        limits = _limit_kwargs(cpus, mem_mb)
        try:
            self._client.update_container(
                self.id, cpu_shares=limits["cpu_shares"], cpu_period=limits["cpu_period"],
                cpu_quota=limits["cpu_quota"], mem_limit=limits["mem_limit"],
                memswap_limit=limits["memswap_limit"])
        except _engine_errors() as exc:
            raise ContainerError(f"cannot raise the limits of container {self.name}: "
                                 f"{_reason(exc)}") from None
        logger.info("slot container %s now limited to %g CPUs, %g MB", self.name, cpus, mem_mb)

    def _watch(self) -> None:
        """Wait for the container's end (the engine's blocking wait, on a client of its own);
        then the slot is lost unless it is being removed."""
        try:
            client = self._engine()
        except ContainerError as exc:
            logger.warning("cannot watch container %s: %s", self.name, exc)
            return
        while not self.gone.is_set():
            try:
                client.wait(self.id, timeout=None)
                break
            except _engine_errors() as exc:
                if _is_not_found(exc):
                    break
                logger.info("container %s: wait: %s (again)", self.name, _reason(exc))
                self._closing.wait(1.0)
        client.close()
        self.lost()

    def remove(self) -> None:
        """Remove the container now (SHUTDOWN); errors are logged."""
        self._closing.set()
        with self._lock:
            self._remove_quietly()

    def _remove_quietly(self) -> None:
        if self._client is None:
            return
        if self.id:
            try:
                self._client.remove_container(self.id, force=True)
                logger.info("slot container %s removed", self.name)
            except _engine_errors() as exc:
                logger.info("container %s: remove: %s", self.name, _reason(exc))
        try:
            self._client.close()
        except Exception:  # noqa: BLE001 - closing a session never matters
            pass
        self._client = None

    # -- trials -----------------------------------------------------------------------------

    def run(self, task_id: str, command: str, environment: Mapping[str, str],
            sandbox: Path, resources: Sequence[Mapping[str, Any]] = (),
            output: tuple[Path, Path] | None = None) -> ContainerTaskProcess:
        """Start one trial's command in the container (creating it at the first trial).

        Args:
            task_id: the trial's task id.
            command: its shell command.
            environment: its own environment (the TaskInfo's, not the executor's).
            sandbox: its sandbox on the host, inside the executor's.
            resources: its TaskInfo resources (the container's limits follow them).
            output: where its stdout and stderr go on the host, inside the executor's
                sandbox (the named pipes of ``executor/task_output.py``); None: the files
                ``stdout`` and ``stderr`` of its sandbox.

        Raises:
            ContainerError: with the reason it cannot start.
        """
        self.ensure(*task_limits(resources))
        env = self.task_environment(task_id, environment, sandbox)
        streams = ("stdout", "stderr") if output is None else tuple(
            self.inside(path) for path in output)
        return ContainerTaskProcess(self, command, env, self.inside(sandbox), sandbox, streams)

    def inside(self, path: Path) -> str:
        """Where ``path``, in the executor's sandbox on the host, is in the container."""
        relative = path.relative_to(self.sandbox).as_posix()
        return SANDBOX_PATH if relative == "." else f"{SANDBOX_PATH}/{relative}"

    def task_environment(self, task_id: str, environment: Mapping[str, str],
                         sandbox: Path) -> dict[str, str]:
        """A trial's environment in the container, over the image's (whose ``PATH`` stays):
        Mesos' variables with its sandbox in the container, then the TaskInfo's own."""
        inside = self.inside(sandbox)
        return {
            "MESOS_SANDBOX": inside, "MESOS_DIRECTORY": inside, "MESOS_TASK_ID": task_id,
            "MESOS_CONTAINER_NAME": self.name,
            **{name: os.environ[name] for name in ("MESOS_FRAMEWORK_ID", "MESOS_EXECUTOR_ID",
                                                   "MESOS_SLAVE_ID", "MESOS_AGENT_ID")
               if name in os.environ},
            **{k: v for k, v in environment.items() if k != "PATH"},
        }

    def exec(self, command: str, environment: Mapping[str, str], log: Path,
             ) -> ContainerTaskProcess:
        """Run ``command`` of the slot's own (its pre-imported interpreter) in the container,
        in the slot's sandbox, with its output appended to ``log`` there.

        Raises:
            ContainerError: the container is not running, or the engine refused the exec.
        """
        with self._lock:
            if not self.id or self.gone.is_set():
                raise ContainerError(f"the slot's container {self.name or ''} is not running")
        where = self.inside(log)
        return ContainerTaskProcess(self, command, dict(environment), SANDBOX_PATH,
                                    self.sandbox, (where, where))

    def client(self) -> Any:
        """A fresh Engine API client (one per trial: the blocking exec stream holds it)."""
        return self._engine()

    def lost(self) -> None:
        self.gone.set()
        if not self._closing.is_set():
            self._on_lost(self)


def _limit_kwargs(cpus: float, mem_mb: float) -> dict[str, Any]:
    cores = float(os.cpu_count() or 1)
    kwargs: dict[str, Any] = {"cpu_shares": max(MIN_CPU_SHARES, int(CPU_SHARES_PER_CPU * cpus)),
                              "cpu_period": CFS_PERIOD_US,
                              "cpu_quota": int(max(0.01, min(cpus, cores)) * CFS_PERIOD_US)}
    mem_bytes = int(max(MIN_MEMORY_MB, mem_mb) * 1024 * 1024)
    kwargs.update(mem_limit=mem_bytes, memswap_limit=mem_bytes)
    return kwargs


def _end_executor(container: SlotContainer) -> None:
    logger.error("the slot's container %s ended under it: the executor ends (its trial is "
                 "lost)", container.name)
    logging.shutdown()
    os._exit(CONTAINER_LOST_EXIT)


_WRAPPER = 'exec >>"$2" 2>>"$3" </dev/null; exec /bin/sh -c "$1"'
"""Run inside the trial's sandbox: output to its files (or the executor's pipes into them), then
the command in the same process (so the exec's PID stays the process group leader)."""


class ContainerTaskProcess:
    """One trial's command, ``docker exec``'d in the slot's container (TaskProcess's interface).

    Args:
        container: the slot's container.
        command: the shell command.
        env: its environment inside the container.
        workdir: its sandbox inside the container.
        sandbox: its sandbox on the host.
        streams: where its stdout and stderr go inside the container.
    """

    def __init__(self, container: SlotContainer, command: str, env: Mapping[str, str],
                 workdir: str, sandbox: Path,
                 streams: tuple[str, ...] = ("stdout", "stderr")) -> None:
        self.sandbox = sandbox
        self.killed = threading.Event()
        self._container = container
        self._client = container.client()
        self._pid: int | None = None
        self._returncode: int | None = None
        errors = _engine_errors()
        try:
            self._exec = str(self._client.exec_create(
                container.id, ["/bin/sh", "-c", _WRAPPER, "sh", command, *streams],
                environment=dict(env),
                workdir=workdir, stdout=True, stderr=True)["Id"])
            self._stream = self._client.exec_start(self._exec, stream=True)
        except errors as exc:
            self._close()
            if _is_not_found(exc):  # it ended under the slot: the slot is lost
                container.lost()
            raise ContainerError(f"cannot exec in container {container.name}: "
                                 f"{_reason(exc)}") from None

    @property
    def pid(self) -> int:
        """The exec's process on the host (its process group), once the engine knows it."""
        if self._pid is None:
            deadline = time.monotonic() + 10.0
            while time.monotonic() < deadline:
                state = self._inspect()
                pid = int(state.get("Pid") or 0)
                if pid or state.get("Running") is False:
                    self._pid = pid
                    break
                time.sleep(0.005)
        return self._pid or 0

    def _inspect(self) -> dict[str, Any]:
        try:
            return dict(self._client.exec_inspect(self._exec))
        except _engine_errors() as exc:
            logger.info("exec %s: inspect: %s", self._exec[:12], _reason(exc))
            return {}

    def wait(self) -> int:
        """Wait for the command; its return code (negative: the signal that ended it).

        A command killed by SIGKILL that this executor did not kill, in a container that ended
        meanwhile, is the slot's loss: the executor ends (:meth:`SlotContainer.lost`)."""
        if self._returncode is not None:
            return self._returncode
        try:
            for _ in self._stream:
                pass
        except _engine_errors() as exc:
            logger.info("exec %s: stream: %s", self._exec[:12], _reason(exc))
        code = self._inspect().get("ExitCode")
        status = int(code) if isinstance(code, int) else 128 + signal.SIGKILL
        returncode = -(status - 128) if 128 < status < 128 + 65 else status
        if not self.killed.is_set() and (returncode == -signal.SIGKILL or code is None) \
                and self._container.gone.wait(LOST_WAIT):
            self._container.lost()
            threading.Event().wait()  # the executor is ending; this trial's end is not reported
        self._returncode = returncode
        self._close()
        return returncode

    def poll(self) -> int | None:
        if self._returncode is not None:
            return self._returncode
        state = self._inspect()
        if state.get("Running", True):
            return None
        code = state.get("ExitCode")
        return int(code) if isinstance(code, int) else None

    def kill(self, grace: float) -> None:
        """SIGTERM the process group (from the host), then SIGKILL it after ``grace``.

        Only while the engine says the command runs: its process is not this executor's
        child, so once it ended the kernel may give its pid, as a process group, to anyone."""
        self.killed.set()
        pid = self.pid
        if not pid or self.poll() is not None:
            return
        self._signal(pid, signal.SIGTERM)
        deadline = time.monotonic() + max(grace, 0.0)
        while time.monotonic() < deadline and self.poll() is None:
            time.sleep(0.05)
        if self.poll() is None:
            self._signal(pid, signal.SIGKILL)

    @staticmethod
    def _signal(pid: int, signum: int) -> None:
        try:
            os.killpg(pid, signum)
        except (ProcessLookupError, PermissionError):
            pass

    def _close(self) -> None:
        try:
            self._client.close()
        except Exception:  # noqa: BLE001 - closing a session never matters
            pass
