"""A run's OPA policy evaluation (HCP's `policy-evaluations`) and its outcome per policy set (`policy-set-outcomes`).

One evaluation per task stage; one outcome per policy set that applied to the run's workspace. A policy's query
must give an array (a Rego set or array): empty passes, each element is a failure message. A policy set whose
modules do not compile, or whose evaluation ran out of time or memory, errors every policy in it. The evaluation
fails when a mandatory policy failed or errored; advisory failures are reported and pass.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

from terrace.domain.policies import VersionPolicy, failing_level

PENDING, RUNNING, PASSED, FAILED, ERRORED, OVERRIDDEN = (
    "pending",
    "running",
    "passed",
    "failed",
    "errored",
    "overridden",
)
OPEN = (PENDING, RUNNING)
MESSAGES_MAX = 50  # failure messages kept per policy
MESSAGE_MAX = 1000

Verdict = Literal["pending", "passed", "failed", "awaiting_override", "errored"]


@dataclass(frozen=True)
class QueryResult:
    """What the policy engine gave for one query."""

    query: str
    defined: bool  # False: undefined (no such rule, or a rule whose body never held)
    value: Any = None  # its JSON value when defined
    error: str | None = None  # a runtime error of this query


@dataclass(frozen=True)
class EngineResult:
    results: tuple[QueryResult, ...] = ()
    error: str | None = None  # the modules did not compile, or the evaluation ran out of time or memory


def empty_count() -> dict[str, int]:
    return {"advisory-failed": 0, "mandatory-failed": 0, "passed": 0, "errored": 0}


@dataclass(frozen=True)
class PolicyEvaluation:
    id: str
    run_id: str
    stage_id: str
    workspace_id: str
    organization: str
    status: str
    result_count: dict[str, int]
    status_timestamps: dict[str, str]
    outcome_ids: tuple[str, ...]
    created_at: str
    updated_at: str
    overridable: bool = False  # every policy set with a mandatory failure allows an override
    queued_epoch: float | None = None  # when the run reached the stage (its deadline counts from here)

    @property
    def open(self) -> bool:
        return self.status in OPEN


@dataclass(frozen=True)
class PolicySetOutcome:
    id: str
    evaluation_id: str
    policy_set_id: str
    policy_set_name: str
    policy_set_description: str
    overridable: bool
    outcomes: tuple[dict[str, Any], ...] = ()
    error: str = ""
    result_count: dict[str, int] = field(default_factory=empty_count)


def _message(item: Any) -> str:
    text = item if isinstance(item, str) else json.dumps(item, sort_keys=True)
    return text[:MESSAGE_MAX]


def policy_outcome(policy: VersionPolicy, result: QueryResult | None, set_error: str | None) -> dict[str, Any]:
    """One policy's outcome (HCP's shape: enforcement_level, query, status, policy_name, description, output)."""
    base = {
        "enforcement_level": policy.enforcement_level,
        "query": policy.query,
        "policy_name": policy.name,
        "description": policy.description,
    }
    if set_error or result is None:
        return {**base, "status": ERRORED, "output": [{"error": set_error or "not evaluated"}]}
    if result.error:
        return {**base, "status": ERRORED, "output": [{"error": result.error}]}
    if not result.defined:
        return {**base, "status": ERRORED, "output": [{"error": f"the query {policy.query} is undefined"}]}
    if not isinstance(result.value, list):
        detail = f"the query {policy.query} must give an array (a set of messages), not {_message(result.value)}"
        return {**base, "status": ERRORED, "output": [{"error": detail[:MESSAGE_MAX]}]}
    messages = [_message(item) for item in result.value[:MESSAGES_MAX]]
    return {**base, "status": FAILED if messages else PASSED, "output": [{"result": messages}] if messages else []}


def count(outcomes: list[dict[str, Any]]) -> dict[str, int]:
    counts = empty_count()
    for outcome in outcomes:
        if outcome["status"] == PASSED:
            counts["passed"] += 1
        elif outcome["status"] == ERRORED:
            counts["errored"] += 1
        else:
            counts[f"{failing_level(outcome['enforcement_level'])}-failed"] += 1
    return counts


def blocking(outcome: dict[str, Any]) -> bool:
    """A mandatory policy that failed or errored blocks the run."""
    return outcome["status"] in (FAILED, ERRORED) and failing_level(outcome["enforcement_level"]) == "mandatory"


def conclude(sets: list[PolicySetOutcome]) -> tuple[str, dict[str, int], bool]:
    """(status, result count, overridable) of an evaluation whose policy sets all ran."""
    total = empty_count()
    for outcome in sets:
        for key, value in outcome.result_count.items():
            total[key] += value
    blocked = [s for s in sets if any(blocking(o) for o in s.outcomes)]
    if not blocked:
        return PASSED, total, False
    only_errors = all(o["status"] == ERRORED for s in blocked for o in s.outcomes if blocking(o))
    return (ERRORED if only_errors else FAILED), total, all(s.overridable for s in blocked)


def verdict(evaluations: list[PolicyEvaluation]) -> Verdict:
    """The stage participant's answer over the evaluations of one stage."""
    if any(e.open for e in evaluations):
        return "pending"
    failed = [e for e in evaluations if e.status in (FAILED, ERRORED)]
    if not failed:
        return "passed"
    if all(e.status == FAILED and e.overridable for e in failed):
        return "awaiting_override"
    return "errored" if all(e.status == ERRORED for e in failed) else "failed"


@dataclass(frozen=True)
class PolicyCheck:
    """A policy evaluation as the policy checks of older clients show it (`services/policies/policy_checks.py`)."""

    id: str
    run_id: str
    status: str
    result: dict[str, object]
    overridable: bool
    can_override: bool
    status_timestamps: dict[str, str]
    evaluation: PolicyEvaluation
