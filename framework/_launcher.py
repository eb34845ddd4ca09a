"""A launch the offer policy planned, as the Mesos TaskInfo that runs it.

AppCore's task carries the job token and where to serve; a trial's its assignment, its token,
where AppCore and the framework are, the user's files, ``--output``'s folder and container.
Both carry the job's environment and, for a framework that moves, where to ask for it
(``common/rendezvous.py``: the master's address and the FrameworkID). AppCore's launch is
recorded with the controller here; a trial's by the scheduler, once it knows whether the trial
runs on a warm slot.
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any

from disauto.common import task_env
from disauto.common.resources import Resources
from disauto.common.tokens import trial_token
from disauto.framework._checkpoints import checkpoint_env
from disauto.framework._containers import container_info
from disauto.framework._containers import task_environment
from disauto.framework._job.ports import SchedulerPort
from disauto.framework._mesos_link import MesosLink
from disauto.framework._offers import OfferView
from disauto.framework._tasks import appcore_task
from disauto.framework._tasks import trial_task


class Launcher:
    """Builds the tasks of one job.

    Args:
        controller: the job's controller.
        link: the framework's link to its master.
        framework_address: host:port of the framework's gRPC service.
        uris: CommandInfo.uris that ship the user's files and inputs to each trial.
        trial_env: extra environment for trials.
        tls_env: the framework's certificate and name (``task_env.FRAMEWORK_CERT``...) for
            AppCore and the trials when the job uses TLS.
        appcore_bind: where AppCore listens; "" for the host name of its offer.
    """

    def __init__(self, controller: SchedulerPort, link: MesosLink, framework_address: str, *,
                 uris: Sequence[Mapping[str, Any]] = (),
                 trial_env: Mapping[str, str] | None = None,
                 tls_env: Mapping[str, str] | None = None, appcore_bind: str = "") -> None:
        self._job = controller
        self._link = link
        self._framework_address = framework_address
        self.uris = list(uris)
        self._tls_env = dict(tls_env or {})
        self._trial_env = {**(trial_env or {}), **self._tls_env}
        self._appcore_bind = appcore_bind

    def appcore(self, view: OfferView, claim: Resources) -> dict[str, Any] | None:
        """AppCore's task on ``view``'s agent, its launch recorded; None if AppCore is no
        longer wanted."""
        config = self._job.config
        container = (container_info(config.appcore_docker_image, config.containerizer)
                     if config.appcore_docker_image else None)
        task_id = self._job.next_appcore_task_id()
        task = appcore_task(
            task_id=task_id,
            agent_id=view.agent_id,
            hostname=view.hostname,
            claim=claim,
            command=config.appcore_command,
            job_id=config.job_id,
            framework_address=self._framework_address,
            job_token=self._job.job_token,
            bind_host=self._appcore_bind,
            extra_env=task_environment({**config.extra_env, **self._tls_env,
                                        **self._rendezvous_env()}, container),
            container=container,
        )
        return task if self._job.appcore_launched(task_id, view.agent_id) else None

    def trial(self, number: int, view: OfferView, claim: Resources) -> dict[str, Any] | None:
        """Trial ``number``'s task on ``view``'s agent (not recorded yet); None if the trial no
        longer waits, or no AppCore is attached for it to report to."""
        trial = self._job.trial_for_launch(number)
        appcore, appcore_certificate = self._job.tasks.appcore_endpoint()
        if trial is None or not appcore:
            return None
        config = self._job.config
        output_dir = ""
        if config.output is not None:
            output_dir = f"{config.output.destination}/trial-{trial.number:04d}"
        container = self.runner_container()
        return trial_task(
            trial_number=trial.number,
            agent_id=view.agent_id,
            claim=claim,
            launch_cmd=config.launch_cmd,
            job_id=config.job_id,
            assignment=trial.assignment,
            trial_token=trial_token(self._job.job_token, trial.number),
            appcore_address=appcore,
            appcore_certificate=appcore_certificate,
            framework_address=self._framework_address,
            uris=self.uris,
            output_dir=output_dir,
            output_name=config.output.name if config.output else "",
            extra_env={**self.runner_environment(), **checkpoint_env(config, trial)},
            container=container,
            retries=trial.retries,
        )

    def runner_container(self) -> dict[str, Any] | None:
        """The ContainerInfo of the job's trials (``--docker-image``), or None."""
        config = self._job.config
        if not config.docker_image:
            return None
        return container_info(
            config.docker_image, config.containerizer,
            host_paths=[config.output.destination] if config.output is not None else [])

    def runner_environment(self) -> dict[str, str]:
        """The environment every trial's task gets besides its own (in its container's
        form)."""
        return task_environment({**self._job.config.extra_env, **self._trial_env,
                                 **self._rendezvous_env()}, self.runner_container())

    def _rendezvous_env(self) -> dict[str, str]:
        """Where a task asks for this framework's address if it moves (common.rendezvous)."""
        return {task_env.MASTER_ADDR: self._link.master_address(),
                task_env.FRAMEWORK_ID: self._link.framework_id()}
