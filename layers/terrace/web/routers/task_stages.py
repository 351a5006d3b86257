"""/api/v2 task stages: a run's stages, one stage, and overriding one that awaits an override."""

from __future__ import annotations

from fastapi import APIRouter, Request

from terrace.web import bodies, run_documents, task_stage_documents
from terrace.web.deps import ContainerDep, PrincipalDep
from terrace.web.jsonapi import JSONAPIResponse, JSONBody, paginate, respond

router = APIRouter(prefix="/api/v2")


@router.get("/runs/{run_id}/task-stages")
def list_task_stages(
    run_id: str, request: Request, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    run, stages = container.stage_progress.list_for(principal, run_id)
    page, meta, links = paginate(request, stages)
    can = container.stage_progress.can_override(principal, run)
    names = run_documents.include_names(request)
    return respond(
        [task_stage_documents.stage(s, can_override=can) for s in page],
        meta=meta,
        links=links,
        included=task_stage_documents.included(container, principal, page, names),
    )


@router.get("/task-stages/{stage_id}")
def read_task_stage(
    stage_id: str, request: Request, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    stage, run = container.stage_progress.get(principal, stage_id)
    can = container.stage_progress.can_override(principal, run)
    names = run_documents.include_names(request)
    return respond(
        task_stage_documents.stage(stage, can_override=can),
        included=task_stage_documents.included(container, principal, [stage], names),
    )


@router.post("/task-stages/{stage_id}/actions/override", openapi_extra=bodies.OVERRIDE)
def override_task_stage(
    stage_id: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    comment = body.get("comment") if isinstance(body, dict) else None
    stage = container.stage_progress.override(principal, stage_id, comment if isinstance(comment, str) else None)
    return respond(task_stage_documents.stage(stage, can_override=True))
