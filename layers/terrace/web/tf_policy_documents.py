"""A run's OPA policy results in the shapes terraform 1.16's `cloud` block prints as its policy summary:
HCP's `tf-policy-evaluations` (the run's `include=tf_policy_evaluations`) and `tf-policy-set-outcomes`
(`tf-policy-evaluations/:id/tf-policy-set-outcomes`), as go-tfe v1.110 reads them.

They are the same evaluations and outcomes as the task stages' `policy-evaluations` (one evaluation per stage, its
id shared): terraform renders the evaluations of the `Init` and `Plan` stages after a plan and those of `Apply`
after an apply, so a stage's type follows the task stage it ran in. An outcome's error is an object here
(`{type, summary, detail}`), a string in the older shape; a failed policy's messages are its diagnostics.
"""

from __future__ import annotations

from typing import Any

from terrace.domain import task_stages
from terrace.domain.policy_evaluations import PolicyEvaluation, PolicySetOutcome
from terrace.web.jsonapi import ref, resource

EVALUATIONS = "tf-policy-evaluations"
OUTCOMES = "tf-policy-set-outcomes"
RUN_RELATIONSHIP = "tf-policy-evaluations"
_STAGE_TYPES = {task_stages.PRE_PLAN: "Init", task_stages.POST_PLAN: "Plan", task_stages.PRE_APPLY: "Apply"}


def stage_type(e: PolicyEvaluation) -> str:
    """HCP's stage type of the task stage `e` ran in (an unknown stage id: `Plan`, where OPA runs)."""
    try:
        stage = task_stages.stage_of(e.stage_id)
    except (IndexError, ValueError):
        return "Plan"
    return _STAGE_TYPES.get(stage, "Plan")


def result_count(counts: dict[str, int]) -> dict[str, int]:
    return {
        "advisory-failed": counts.get("advisory-failed", 0),
        "mandatory-failed": counts.get("mandatory-failed", 0),
        "passed": counts.get("passed", 0),
        "errored": counts.get("errored", 0),
        "unknown": counts.get("unknown", 0),
    }


def evaluation(e: PolicyEvaluation) -> dict[str, Any]:
    return resource(
        EVALUATIONS,
        e.id,
        {
            "status": e.status,
            "stage-type": stage_type(e),
            "status-timestamps": e.status_timestamps,
            "result-count": result_count(e.result_count),
            "organized-log": False,
            "actions": {"is-overridable": e.overridable},
            "created-at": e.created_at,
            "updated-at": e.updated_at,
        },
        {
            "run": ref("runs", e.run_id),
            "outcomes": {"links": {"related": f"/api/v2/{EVALUATIONS}/{e.id}/{OUTCOMES}"}},
        },
        links={"self": f"/api/v2/{EVALUATIONS}/{e.id}"},
    )


def _policy(outcome: dict[str, Any]) -> dict[str, Any]:
    messages: list[str] = []
    for item in outcome.get("output") or []:
        if isinstance(item, dict):
            messages.extend(str(m) for m in item.get("result") or [])
            if item.get("error"):
                messages.append(str(item["error"]))
    return {
        "enforcement_level": outcome.get("enforcement_level", "advisory"),
        "status": outcome.get("status", ""),
        "description": outcome.get("description") or "",
        "file_name": "",
        "policy_name": outcome.get("policy_name", ""),
        "diagnostics": [{"summary": m, "code": "", "context": ""} for m in messages],
    }


def outcome(o: PolicySetOutcome) -> dict[str, Any]:
    return resource(
        OUTCOMES,
        o.id,
        {
            "outcomes": [_policy(p) for p in o.outcomes],
            "error": {"type": "setup_error", "summary": o.error, "detail": ""} if o.error else None,
            "overridable": o.overridable,
            "policy-set-name": o.policy_set_name,
            "policy-set-description": o.policy_set_description,
            "result-count": result_count(o.result_count),
        },
        {"tf-policy-evaluation": ref(EVALUATIONS, o.evaluation_id)},
    )


def link_runs(runs: list[dict[str, Any]], included: list[dict[str, Any]]) -> None:
    """Name each run's included evaluations in its `tf-policy-evaluations` relationship (go-tfe fills
    `Run.TFPolicyEvaluations` from the relationship's data, then the included resources)."""
    found: dict[str, list[dict[str, str]]] = {}
    for document in included:
        if document["type"] == EVALUATIONS:
            run_id = document["relationships"]["run"]["data"]["id"]
            found.setdefault(run_id, []).append({"type": EVALUATIONS, "id": document["id"]})
    for run in runs:
        run.setdefault("relationships", {})[RUN_RELATIONSHIP] = {"data": found.get(run["id"], [])}
