"""DisAuto's submission side: ``da-submit`` (``cli``), ``da-job`` (``job_cli``) and the Python
API (``api``).

``from disauto import submit`` gives this package, and calling it submits a job
(:func:`disauto.submit.api.submit`, README "The Python API"): the package's class is a
subclass of :class:`types.ModuleType` with ``__call__``, Python's own way to customise a
module. Nothing else is imported here, so ``da-submit --help`` stays fast.
"""

from __future__ import annotations

import sys
import types
from typing import Any


class _SubmitPackage(types.ModuleType):
    """The ``disauto.submit`` package, which submits a job when called."""

    def __call__(self, **options: Any) -> Any:
        """Submit a job: :func:`disauto.submit.api.submit` (``help(disauto.submit.api)``)."""
        from disauto.submit.api import submit as submit_job

        return submit_job(**options)


sys.modules[__name__].__class__ = _SubmitPackage
