"""DisAuto framework."""
