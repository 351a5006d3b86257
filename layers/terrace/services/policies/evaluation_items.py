"""Policy evaluations and policy set outcomes as table items (`evaluations.py` writes and reads them)."""

from __future__ import annotations

from typing import Any

from terrace.domain import policy_evaluations as pe
from terrace.domain.policy_evaluations import PolicyEvaluation, PolicySetOutcome

EVAL_KEY, OUTCOME_KEY = "poleval", "psout"


def evaluation_of(item: dict[str, Any]) -> PolicyEvaluation:
    return PolicyEvaluation(
        id=item["pk"],
        run_id=item["run_id"],
        stage_id=item["stage_id"],
        workspace_id=item["workspace_id"],
        organization=item["organization"],
        status=item["status"],
        result_count=dict(item.get("result_count") or pe.empty_count()),
        status_timestamps=dict(item.get("status_timestamps", {})),
        outcome_ids=tuple(item.get("outcome_ids", [])),
        created_at=item["created_at"],
        updated_at=item["updated_at"],
        overridable=bool(item.get("overridable")),
        queued_epoch=float(item["queued_epoch"]) if item.get("queued_epoch") is not None else None,
    )


def outcome_of(item: dict[str, Any]) -> PolicySetOutcome:
    return PolicySetOutcome(
        id=item["pk"],
        evaluation_id=item["evaluation_id"],
        policy_set_id=item["policy_set_id"],
        policy_set_name=item["policy_set_name"],
        policy_set_description=item.get("policy_set_description", ""),
        overridable=bool(item.get("overridable")),
        outcomes=tuple(item.get("outcomes", [])),
        error=item.get("error", ""),
        result_count=dict(item.get("result_count") or pe.empty_count()),
    )


def outcome_item(outcome: PolicySetOutcome) -> dict[str, Any]:
    return {
        "evaluation_id": outcome.evaluation_id,
        "policy_set_id": outcome.policy_set_id,
        "policy_set_name": outcome.policy_set_name,
        "policy_set_description": outcome.policy_set_description,
        "overridable": outcome.overridable,
        "outcomes": list(outcome.outcomes),
        "error": outcome.error,
        "result_count": outcome.result_count,
        "gsi1pk": f"{outcome.evaluation_id}#outcomes",
        "gsi1sk": outcome.id,
    }
