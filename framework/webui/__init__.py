"""The job page: a job's trials, plots, logs and kill buttons in a browser (docs/ui.md).

``views`` turns a job's record into the page's JSON (no server needed), ``importance`` asks
Optuna which parameters mattered, ``server`` serves the page and its JSON over HTTP (the
framework while the job runs, ``da-job ui`` from the records), ``report`` writes the
self-contained ``report.html``; ``static/`` holds the page itself. What ``da-job ui`` needs
of it is named here: the server, the record's source and the importance worker.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from disauto.common.registry import lazy_attributes


if TYPE_CHECKING:
    from disauto.framework.webui.server import JobPageServer
    from disauto.framework.webui.sources import JobSource
    from disauto.framework.webui.sources import RecordedJob
    from disauto.framework.webui.views import compute_importance_in_worker
    from disauto.framework.webui.views import stop_importance_worker

__all__ = ["JobPageServer", "JobSource", "RecordedJob", "compute_importance_in_worker",
           "stop_importance_worker"]

# Loaded on first use: the framework's parts that import one of the page's modules do not
# load the server and everything behind it.
__getattr__, __dir__ = lazy_attributes(__name__, {
    "JobPageServer": f"{__name__}.server:JobPageServer",
    "JobSource": f"{__name__}.sources:JobSource",
    "RecordedJob": f"{__name__}.sources:RecordedJob",
    "compute_importance_in_worker": f"{__name__}.views:compute_importance_in_worker",
    "stop_importance_worker": f"{__name__}.views:stop_importance_worker",
})
