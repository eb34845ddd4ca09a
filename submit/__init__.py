"""DisAuto submit."""
