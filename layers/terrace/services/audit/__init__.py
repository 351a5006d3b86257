"""The audit trail: every security-relevant action recorded once, append-only (`recorder.py`, fed by the app's
audit middleware), its storage (`store.py`) and its reads, checked by the Authorizer (`trail.py`)."""
