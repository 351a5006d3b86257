"""/api/v2 run tasks: an organization's tasks, their workspace attachments, task results and their callback."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from terrace.web import integration_bodies, run_documents
from terrace.web import run_task_documents as docs
from terrace.web.deps import ContainerDep, PrincipalDep
from terrace.web.jsonapi import JSONAPIResponse, JSONBody, attributes, read_document, respond, respond_page

router = APIRouter(prefix="/api/v2")


def _task_id(data: dict[str, object]) -> object:
    relationships = data.get("relationships")
    task = relationships.get("task") if isinstance(relationships, dict) else None
    target = task.get("data") if isinstance(task, dict) else None
    return target.get("id") if isinstance(target, dict) else None


# organization tasks ----------------------------------------------------------------------
@router.get("/organizations/{organization}/tasks")
def list_tasks(
    organization: str, request: Request, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    name, tasks = container.run_tasks.list(principal, organization)
    return respond_page(request, tasks, lambda t: docs.task(t, name))


@router.post("/organizations/{organization}/tasks", openapi_extra=integration_bodies.RUN_TASK)
def create_task(organization: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    data = read_document(body, "tasks")
    task = container.run_tasks.create(principal, organization, attributes(data))
    return respond(docs.task(task, container.run_tasks.organization_name(task), []), 201)


@router.get("/tasks/{task_id}")
def read_task(task_id: str, request: Request, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    task, attachments = container.run_tasks.with_attachments(principal, task_id)
    included = []
    if run_documents.include_names(request) & {"workspace_tasks", "workspace_tasks.workspace"}:
        included = [docs.workspace_task(a) for a in attachments]
    return respond(docs.task(task, container.run_tasks.organization_name(task), attachments), included=included)


@router.patch("/tasks/{task_id}", openapi_extra=integration_bodies.RUN_TASK)
def update_task(task_id: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    data = read_document(body, "tasks")
    task = container.run_tasks.update(principal, task_id, attributes(data))
    return respond(docs.task(task, container.run_tasks.organization_name(task)))


@router.delete("/tasks/{task_id}")
def delete_task(task_id: str, container: ContainerDep, principal: PrincipalDep) -> Response:
    container.run_tasks.delete(principal, task_id)
    return Response(status_code=204)


# workspace attachments -------------------------------------------------------------------
@router.get("/workspaces/{workspace_id}/tasks")
def list_workspace_tasks(
    workspace_id: str, request: Request, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    return respond_page(request, container.run_tasks.attachments(principal, workspace_id), docs.workspace_task)


@router.post("/workspaces/{workspace_id}/tasks", openapi_extra=integration_bodies.WORKSPACE_TASK)
def attach_task(workspace_id: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    data = read_document(body, "workspace-tasks")
    attached = container.run_tasks.attach(principal, workspace_id, _task_id(data), attributes(data))
    return respond(docs.workspace_task(attached), 201)


@router.get("/workspaces/{workspace_id}/tasks/{attachment_id}")
def read_workspace_task(
    workspace_id: str, attachment_id: str, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    return respond(docs.workspace_task(container.run_tasks.attachment(principal, workspace_id, attachment_id)))


@router.patch("/workspaces/{workspace_id}/tasks/{attachment_id}", openapi_extra=integration_bodies.WORKSPACE_TASK)
def update_workspace_task(
    workspace_id: str, attachment_id: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    data = read_document(body, "workspace-tasks")
    changed = container.run_tasks.update_attachment(principal, workspace_id, attachment_id, attributes(data))
    return respond(docs.workspace_task(changed))


@router.delete("/workspaces/{workspace_id}/tasks/{attachment_id}")
def detach_task(workspace_id: str, attachment_id: str, container: ContainerDep, principal: PrincipalDep) -> Response:
    container.run_tasks.detach(principal, workspace_id, attachment_id)
    return Response(status_code=204)


# task results ----------------------------------------------------------------------------
@router.get("/task-results/{result_id}")
def read_task_result(result_id: str, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    return respond(docs.task_result(container.task_results.get(principal, result_id)))


@router.patch("/task-results/{result_id}/callback", openapi_extra=integration_bodies.TASK_RESULT)
def task_result_callback(
    result_id: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    return respond(docs.task_result(container.task_results.callback(principal, result_id, body)))
