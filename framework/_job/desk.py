"""The running job's side of the control channel: the run loop's one reader of requests.

Each round of the run loop :meth:`ControlDesk.serve` takes the requests not answered yet
(``framework/control.py``), carries each out through the job's controller and writes its
typed answer; a request that cannot be read is answered with the one line that says why.
"""

from __future__ import annotations

from collections.abc import Callable
import logging

from disauto.framework._errors import FailedPreconditionError
from disauto.framework._errors import NotFoundError
from disauto.framework._job.ports import JobControl
from disauto.framework._job.update import UpdateRefusedError
from disauto.framework.control import KILLED_FROM_PAGE
from disauto.framework.control import Answer
from disauto.framework.control import ControlChannel
from disauto.framework.control import KillJob
from disauto.framework.control import KillTrial
from disauto.framework.control import Request
from disauto.framework.control import UpdateSearch
from disauto.protos import framework_pb2


logger = logging.getLogger(__name__)


class ControlDesk:
    """Answers the control channel of the job ``controller`` runs.

    Args:
        channel: the job's control channel.
        controller: the job's controller.
        kill_tasks: kills Mesos tasks by id (a killed trial's task).
    """

    def __init__(self, channel: ControlChannel, controller: JobControl,
                 kill_tasks: Callable[[list[str]], None]) -> None:
        self._channel = channel
        self._controller = controller
        self._kill_tasks = kill_tasks

    def serve(self) -> int:
        """Answer every request not answered yet; how many there were."""
        waiting = self._channel.unanswered()
        for asked in waiting:
            if asked.request is None:
                logger.warning("control request %d: %s", asked.id, asked.error)
                answer = Answer(False, asked.error)
            else:
                answer = self._carry_out(asked.request)
            self._channel.answer(asked.id, answer)
        return len(waiting)

    def _carry_out(self, request: Request) -> Answer:
        if isinstance(request, KillJob):
            return self._kill_job(request.message)
        if isinstance(request, KillTrial):
            return self._kill_trial(request.number)
        return self._update(request)

    def _kill_job(self, message: str) -> Answer:
        job_id = self._controller.config.job_id
        ended = self._controller.outcome
        if ended is not None:  # already ending: the asker waits for its end as for a kill's
            return Answer(True, f"job {job_id} is already ending "
                                f"({framework_pb2.JobOutcome.Name(ended[0])})")
        self._controller.finish(framework_pb2.JOB_KILLED, message)  # who asked
        return Answer(True, f"killing job {job_id}")

    def _kill_trial(self, number: int) -> Answer:
        try:
            tasks = self._controller.kill_trial(number, KILLED_FROM_PAGE)
        except (NotFoundError, FailedPreconditionError) as err:
            logger.info("not killing trial %d: %s", number, err)
            return Answer(False, str(err))
        if tasks:
            self._kill_tasks(tasks)
        return Answer(True, f"trial {number} killed")

    def _update(self, request: UpdateSearch) -> Answer:
        try:
            return Answer(True, self._controller.update_search(request))
        except UpdateRefusedError as err:
            return Answer(False, str(err))
