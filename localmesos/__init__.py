"""DisAuto localmesos."""
