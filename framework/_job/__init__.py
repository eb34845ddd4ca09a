"""One job's state machine, behind the :class:`JobController` facade.

The controller (``controller.py``) is what the framework's other parts talk to: the gRPC
servicer for AppCore, the Mesos scheduler, the run loop, the job page and the control channel;
each but the run loop through its port (``ports.py``), which lists only what it asks. Behind it
each part has one job: the trial book (``book.py``), AppCore's life (``appcore.py``), the event
log that WatchTrials streams (``events.py``), what AppCore and runners send in (``intake.py``),
how a Mesos status update ends a trial or AppCore (``status.py``), how long a trial's task may
run (``exits.py``: ``--trial-timeout``, ``--trial-exit-grace``), ``da-job update``'s rules
(``update.py``), the requests of the control channel (``desk.py``), the job's progress as the
deadline policy reads it (``progress.py``), the launches Mesos has not answered yet
(``silence.py``) and the job's TLS identity in its folder (``tls.py``).

The names below are loaded on first use: a reader of records (``da-job``, ``submit/jobs.py``)
that needs only ``sorted_trials`` does not import the controller and everything behind it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from disauto.common.registry import lazy_attributes


if TYPE_CHECKING:
    from disauto.framework._job.book import sorted_trials
    from disauto.framework._job.controller import APPCORE_KEY
    from disauto.framework._job.controller import JobController
    from disauto.framework._job.progress import Progress

__all__ = ["APPCORE_KEY", "JobController", "Progress", "sorted_trials"]

__getattr__, __dir__ = lazy_attributes(__name__, {
    "APPCORE_KEY": f"{__name__}.controller:APPCORE_KEY",
    "JobController": f"{__name__}.controller:JobController",
    "Progress": f"{__name__}.progress:Progress",
    "sorted_trials": f"{__name__}.book:sorted_trials",
})
