"""The parts `terrace.bootstrap` (the one composition root) assembles: the adapters of each mode
(`aws_adapters.py`, `embedded_adapters.py`) and the services of each area, built on first use
(`access_services.py`, `admin_services.py`, `workspace_services.py`, `state_services.py`, `run_services.py`,
`runner_services.py`)."""
