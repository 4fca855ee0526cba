"""Calibration to the user's own engine: its benchmark files, the plan that produces them, the fit and its file."""
