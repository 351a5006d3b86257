"""Notifications: configurations on workspaces and teams (`configurations.py`), their storage (`store.py`) and
delivery off the request path through the events queue (`delivery.py`)."""
