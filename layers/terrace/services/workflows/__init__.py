"""The use cases: workflows that span service areas (workspace and organization deletion with what they hold,
state rollback under the workspace lock, the data retention sweep, the runs run triggers queue). They sit above
the areas (`access`, `admin`, `workspaces`, `state`, `runs`), call their services, and are called by the
entrypoints or subscribed to events; no area imports them. Wired in `wiring/workflow_services.py`."""
