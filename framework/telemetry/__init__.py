"""Telemetry of a job's trials: collectors that measure, summaries kept with each trial.

``monitor``: the built-in collector, polling the agents' ``/monitor/statistics``; ``usage``:
per-trial summaries (:class:`common.telemetry.TrialUsage`); ``gpu``: NVML figures where the
GPU is. See docs/telemetry.md.
"""
