"""Lambda "policy": evaluates (or compiles) one policy set's Rego and returns the result, nothing else
(`terrace/wiring/policy_function.py`). Tenant-supplied code runs here, in the engine's bounded child process, under
a role that may only write this function's logs and with no Terrace setting in its environment: the events and api
functions invoke it (`adapters/lambda_policy_engine.py`) rather than run Rego beside their own credentials."""

from __future__ import annotations

from typing import Any

from terrace.wiring.policy_function import handle


def lambda_handler(event: Any, context: Any) -> dict[str, Any]:  # noqa: ARG001 - Lambda's signature
    return handle(event)
