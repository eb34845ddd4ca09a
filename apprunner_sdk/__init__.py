"""DisAuto apprunner_sdk."""
