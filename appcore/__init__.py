"""DisAuto appcore."""
