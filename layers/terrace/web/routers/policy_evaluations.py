"""/api/v2 results of a run's OPA policies: `task-stages/:id/policy-evaluations`, `policy-evaluations/:id/
policy-set-outcomes`, `policy-set-outcomes/:id`, the same results as terraform 1.16 reads them
(`tf-policy-evaluations/:id`, its `tf-policy-set-outcomes`: `web/tf_policy_documents.py`), and the policy checks
older clients read (`runs/:id/policy-checks`, `policy-checks/:id`, its `output`)."""

from __future__ import annotations

import re
from typing import Any

from fastapi import APIRouter, Request, Response

from terrace.bootstrap import Container
from terrace.domain.principal import Principal
from terrace.web import policy_serializers as ser
from terrace.web import task_stage_documents, tf_policy_documents
from terrace.web.deps import ContainerDep, PrincipalDep
from terrace.web.jsonapi import JSONAPIResponse, respond, respond_page

router = APIRouter(prefix="/api/v2")
_FILTER = re.compile(r"^filter\[(\d+)\]\[(status|enforcement_level)\]\Z")


def _evaluations(container: Container, principal: Principal, ids: list[str]) -> list[dict[str, Any]]:
    """`include=policy_evaluations` of task stages a checked call of the same request returned."""
    return [ser.evaluation(e) for e in container.policy_evaluations.by_ids(ids)]


task_stage_documents.STAGE_INCLUDES["policy_evaluations"] = ("policy-evaluations", _evaluations)


def _policy_rows(container: Container, principal: Principal, ids: list[str]) -> list[dict[str, Any]]:
    """The run page's rows of a stage's policy evaluations: one per policy, named by its set and policy, with its
    messages (a set that could not be evaluated: one row with its error)."""
    rows: list[dict[str, Any]] = []
    for evaluation in container.policy_evaluations.by_ids(ids):  # those that exist (as the include's)
        for outcome in container.policy_evaluations.outcomes(principal, evaluation.id):
            if outcome.error and not outcome.outcomes:
                rows.append({"name": outcome.policy_set_name, "kind": "policy set", "status": "errored",
                             "enforcement": "", "message": outcome.error, "messages": [], "url": None})  # fmt: skip
            for policy in outcome.outcomes:
                output = [o for o in policy.get("output") or [] if isinstance(o, dict)]
                messages = [str(m) for o in output for m in o.get("result") or []]
                messages += [str(o["error"]) for o in output if o.get("error")]
                rows.append({"name": f"{outcome.policy_set_name} / {policy.get('policy_name', '')}",
                             "kind": "policy", "status": str(policy.get("status", "")),
                             "enforcement": str(policy.get("enforcement_level", "")), "message": "",
                             "messages": messages, "url": None})  # fmt: skip
    return rows


task_stage_documents.STAGE_ROWS["policy-evaluations"] = _policy_rows


@router.get("/task-stages/{stage_id}/policy-evaluations")
def list_policy_evaluations(
    stage_id: str, request: Request, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    stage, _ = container.stage_progress.get(principal, stage_id)  # the same 404 for hidden and absent stages
    return respond_page(request, container.policy_evaluations.of_stage(stage.id), ser.evaluation)


def _filters(request: Request) -> list[dict[str, str]]:
    """go-tfe's `filter[n][status]` / `filter[n][enforcement_level]`: an outcome set matches any numbered filter."""
    filters: dict[str, dict[str, str]] = {}
    for key, value in request.query_params.multi_items():
        match = _FILTER.match(key)
        if match:
            filters.setdefault(match.group(1), {})[match.group(2)] = value
    return list(filters.values())


def _matching(outcome: Any, filters: list[dict[str, str]]) -> Any:
    if not filters:
        return outcome
    kept = [o for o in outcome.outcomes if any(all(o.get(k) == v for k, v in f.items()) for f in filters)]
    return type(outcome)(**{**outcome.__dict__, "outcomes": tuple(kept)})


@router.get("/policy-evaluations/{evaluation_id}/policy-set-outcomes")
def list_policy_set_outcomes(
    evaluation_id: str, request: Request, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    filters = _filters(request)
    found = [_matching(o, filters) for o in container.policy_evaluations.outcomes(principal, evaluation_id)]
    return respond_page(request, found, ser.outcome)


@router.get("/tf-policy-evaluations/{evaluation_id}")
def read_tf_policy_evaluation(evaluation_id: str, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    return respond(tf_policy_documents.evaluation(container.policy_evaluations.get(principal, evaluation_id)))


@router.get("/tf-policy-evaluations/{evaluation_id}/tf-policy-set-outcomes")
def list_tf_policy_set_outcomes(
    evaluation_id: str, request: Request, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    """go-tfe's `TFPolicyEvaluationOutcomes.List`: `filter[status]`, `filter[enforcement-level]` keep the policies
    that match both."""
    wanted = {
        key: value
        for key, value in (
            ("status", request.query_params.get("filter[status]")),
            ("enforcement_level", request.query_params.get("filter[enforcement-level]")),
        )
        if value
    }
    found = [
        _matching(o, [wanted] if wanted else [])
        for o in container.policy_evaluations.outcomes(principal, evaluation_id)
    ]
    return respond_page(request, found, tf_policy_documents.outcome)


@router.get("/policy-set-outcomes/{outcome_id}")
def read_policy_set_outcome(outcome_id: str, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    return respond(ser.outcome(container.policy_evaluations.outcome(principal, outcome_id)))


@router.get("/runs/{run_id}/policy-checks")
def list_policy_checks(
    run_id: str, request: Request, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    return respond_page(request, container.policy_checks.for_run(principal, run_id), ser.policy_check)


@router.get("/policy-checks/{check_id}")
def read_policy_check(check_id: str, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    return respond(ser.policy_check(container.policy_checks.get(principal, check_id)))


@router.post("/policy-checks/{check_id}/actions/override")
def override_policy_check(check_id: str, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    """An older client's override: the override of the task stage the check stands for."""
    check = container.policy_checks.get(principal, check_id)
    container.stage_progress.override(principal, check.evaluation.stage_id)
    return respond(ser.policy_check(container.policy_checks.get(principal, check_id)))


@router.get("/policy-checks/{check_id}/output")
def policy_check_output(check_id: str, container: ContainerDep, principal: PrincipalDep) -> Response:
    return Response(container.policy_checks.output(principal, check_id), media_type="text/plain; charset=utf-8")
