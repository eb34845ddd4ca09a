"""Telemetry on the framework: collectors and processors (``registry``), run on a schedule,
their samples kept in the job store (``common/telemetry.py`` names what a sample is)."""
