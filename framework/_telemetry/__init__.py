"""Telemetry of a job's trials (docs/telemetry.md).

``registry``: the job's collectors and processors (commands or built-in callables), run on a
schedule (``scheduler``), their samples kept in the job store; ``monitor``: the built-in
collector, polling the agents' ``/monitor/statistics``; ``processors``: the built-in processors;
``usage``: per-trial summaries (:class:`common.telemetry.TrialUsage`) kept with each trial.
"""
