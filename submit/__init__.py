"""DisAuto's submission side: ``da-submit`` (``cli``), ``da-job`` (``job_cli``) and the Python
API (``api``).

``from disauto import submit`` gives this package, and calling it submits a job
(:func:`disauto.submit.api.submit`; ``disauto/__init__.py`` makes it callable, README "The
Python API").
"""
