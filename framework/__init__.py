"""DisAuto framework: the Mesos framework one job runs (scheduler, controller, record, page).

Its public face is five modules; every other module is the framework's own (private: a name
starting with ``_``) and may change without notice. The rest of DisAuto (``submit``,
``disauto.testing``) and ``bench`` import these alone (``tests/test_architecture.py``):

* :mod:`~disauto.framework.record`: a job's record (``JobRecord``: its meta, spec, trials and
  results, read and written), and the readings of it ``da-job`` shows.
* :mod:`~disauto.framework.run`: building and running a job's framework (``build_runner``,
  ``JobRunner``), the checks ``da-submit`` runs first, and the controller for a job in one
  process.
* :mod:`~disauto.framework.control`: the control channel ``da-job`` asks a running job through.
* :mod:`~disauto.framework.policies`: the offer policies and what a plug-in one implements.
* :mod:`~disauto.framework.webui`: the job page, served live or from a record (``da-job ui``).
"""

__all__ = ["control", "policies", "record", "run", "webui"]
