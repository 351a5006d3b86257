"""/api/v2 health assessment results (HCP Terraform's Assessment Results API): a workspace's current one, one by
id, and its JSON plan (`json-output`). Results are written by `services/runs/assessments.py`."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Response
from fastapi.responses import RedirectResponse

from terrace.domain.assessments import AssessmentResult
from terrace.web.deps import ContainerDep, PrincipalDep
from terrace.web.jsonapi import respond

router = APIRouter(prefix="/api/v2")


def serialize(result: AssessmentResult) -> dict[str, Any]:
    base = f"/api/v2/assessment-results/{result.id}"
    links = {"self": base}
    if result.json_key:
        links["json-output"] = f"{base}/json-output"
    return {
        "id": result.id,
        "type": "assessment-results",
        "attributes": {
            "drifted": result.drifted,
            "succeeded": result.succeeded,
            "error-msg": result.error_msg,
            "created-at": result.created_at,
            "all-checks-succeeded": result.all_checks_succeeded,
            "checks-passed": result.checks.get("pass", 0),
            "checks-failed": result.checks.get("fail", 0),
            "checks-errored": result.checks.get("error", 0),
            "checks-unknown": result.checks.get("unknown", 0),
            "resources-drifted": result.resources_drifted,
            "resources-undrifted": result.resources_undrifted,
        },
        "relationships": {"workspace": {"data": {"id": result.workspace_id, "type": "workspaces"}}},
        "links": links,
    }


@router.get("/workspaces/{workspace_id}/current-assessment-result")
def current_assessment_result(workspace_id: str, container: ContainerDep, principal: PrincipalDep) -> Response:
    return respond(serialize(container.assessments.current(principal, workspace_id)))


@router.get("/assessment-results/{result_id}")
def read_assessment_result(result_id: str, container: ContainerDep, principal: PrincipalDep) -> Response:
    return respond(serialize(container.assessments.get(principal, result_id)))


@router.get("/assessment-results/{result_id}/json-output")
def assessment_json_output(result_id: str, container: ContainerDep, principal: PrincipalDep) -> Response:
    url = container.assessments.json_url(principal, result_id, container.settings.presign_ttl_s)
    return RedirectResponse(url, status_code=307)
