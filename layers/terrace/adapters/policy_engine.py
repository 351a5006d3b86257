"""The policy engine port: compiles and evaluates OPA (Rego) policies.

`rego_policy_engine.py` runs the rego-cpp engine (`regopy`) in a child process bounded in time and memory, so a
policy that loops or explodes fails its own evaluation, never the server.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from terrace.domain.policy_evaluations import EngineResult, QueryResult

__all__ = ["EngineResult", "PolicyEngine", "QueryResult"]


class PolicyEngine(Protocol):
    def check(self, modules: Mapping[str, str]) -> str | None:
        """None when the modules (file name -> Rego text) compile together, else the engine's message."""
        ...

    def evaluate(
        self, modules: Mapping[str, str], queries: Sequence[str], input_doc: Any, data: Any = None
    ) -> EngineResult:
        """Every query against the modules, `input` and `data` (a JSON object or None)."""
        ...
