"""Runs and their phases: the run service, the workspace queue (`scheduler`), jobs handed to runners, logs,
plans, configuration versions, and the background reaper and scaler."""
