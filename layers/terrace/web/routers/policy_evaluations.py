"""/api/v2 results of a run's OPA policies: `task-stages/:id/policy-evaluations`, `policy-evaluations/:id/
policy-set-outcomes`, `policy-set-outcomes/:id`, and the policy checks older clients read (`runs/:id/policy-checks`,
`policy-checks/:id`, its `output`)."""

from __future__ import annotations

import re
from typing import Any

from fastapi import APIRouter, Request, Response

from terrace.web import policy_serializers as ser
from terrace.web.deps import ContainerDep, PrincipalDep
from terrace.web.jsonapi import JSONAPIResponse, respond, respond_page

router = APIRouter(prefix="/api/v2")
_FILTER = re.compile(r"^filter\[(\d+)\]\[(status|enforcement_level)\]$")


@router.get("/task-stages/{stage_id}/policy-evaluations")
def list_policy_evaluations(
    stage_id: str, request: Request, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    return respond_page(request, container.policy_evaluations.for_stage(principal, stage_id), ser.evaluation)


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


@router.get("/policy-checks/{check_id}/output")
def policy_check_output(check_id: str, container: ContainerDep, principal: PrincipalDep) -> Response:
    return Response(container.policy_checks.output(principal, check_id), media_type="text/plain; charset=utf-8")
