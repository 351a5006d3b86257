"""State versions: writes and history, two-step uploads, the http backend's rules, outputs and the resource
index."""
