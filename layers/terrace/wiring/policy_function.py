"""The composition of the policy function (`functions/policy/handler.py`, AWS): `RegoPolicyEngine` (its bounded child
process) behind the wire format of `adapters/lambda_policy_engine.py`, and `ProcessHclReader` (its bounded child)
behind that of `adapters/lambda_hcl_reader.py` (a request whose `op` is `parse-hcl`), nothing else. The function
reads no setting, no table, no secret: its role may only write its own logs, and the limits come with each request,
within the function's own ceilings (its memory and timeout, `infra/functions.py`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from terrace.adapters import lambda_hcl_reader, tenant_identity
from terrace.adapters.lambda_policy_engine import serve
from terrace.adapters.process_hcl_reader import ProcessHclReader
from terrace.adapters.rego_policy_engine import RegoPolicyEngine

TIMEOUT_MAX_S = 20.0  # `Settings.policy_timeout_s`'s ceiling; the function's timeout leaves room around it
MEMORY_MAX_MB = 768  # of the function's 1,024 MB: the engine's child, beside this Python
DEFAULT_TIMEOUT_S, DEFAULT_MEMORY_MB = 10.0, 512
HCL_BYTES_MAX = 1024 * 1024  # of HCL per upload (the api and events functions send 512 KiB at most)
HCL_DEFAULT_BYTES, HCL_DEFAULT_CPU_S, HCL_DEFAULT_TIMEOUT_S = 512 * 1024, 6, 12.0
tenant_identity.prepare()  # at the cold start: Lambda runs as one uid, so the function hides itself from the child


def _number(value: Any, default: float, low: float, high: float) -> float:
    number = value if isinstance(value, int | float) and not isinstance(value, bool) else default
    return min(max(float(number), low), high)


def engine_for(limits: Mapping[str, Any]) -> RegoPolicyEngine:
    """The engine bounded as the caller asks (its settings), never past the function's ceilings."""
    timeout = _number(limits.get("timeout_s"), DEFAULT_TIMEOUT_S, 0.1, TIMEOUT_MAX_S)
    memory_mb = int(_number(limits.get("memory_mb"), DEFAULT_MEMORY_MB, 16, MEMORY_MAX_MB))
    return RegoPolicyEngine(timeout_s=timeout, cpu_s=max(1, int(timeout)), memory_bytes=memory_mb * 1024 * 1024)


def hcl_reader_for(limits: Mapping[str, Any]) -> ProcessHclReader:
    """The HCL reader bounded as the caller asks, never past the function's ceilings."""
    timeout = _number(limits.get("timeout_s"), HCL_DEFAULT_TIMEOUT_S, 0.1, TIMEOUT_MAX_S)
    return ProcessHclReader(
        bytes_max=int(_number(limits.get("bytes_max"), HCL_DEFAULT_BYTES, 1, HCL_BYTES_MAX)),
        cpu_s=max(1, int(_number(limits.get("cpu_s"), HCL_DEFAULT_CPU_S, 1, timeout))),
        timeout_s=timeout,
        memory_mb=int(_number(limits.get("memory_mb"), DEFAULT_MEMORY_MB, 16, MEMORY_MAX_MB)),
    )


def handle(event: Any) -> dict[str, Any]:
    """One invocation: the request's answer document."""
    request = event if isinstance(event, Mapping) else {}
    if request.get("op") == lambda_hcl_reader.OP:
        return lambda_hcl_reader.serve(request, hcl_reader_for)
    return serve(request, engine_for)
