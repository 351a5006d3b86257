"""Run tasks, workspace run tasks and task results as JSON:API resources (go-tfe `run_task.go`,
`workspace_run_task.go`, `task_result.go`); task results are what a task stage's `include=task_results` adds."""

from __future__ import annotations

from typing import Any

from terrace.bootstrap import Container
from terrace.domain.principal import Principal
from terrace.domain.run_tasks import RunTask, TaskResult, WorkspaceTask
from terrace.web.jsonapi import ref, refs, resource
from terrace.web.task_stage_documents import STAGE_INCLUDES


def task(t: RunTask, organization_name: str, attachments: list[WorkspaceTask] | None = None) -> dict[str, Any]:
    relationships: dict[str, Any] = {"organization": ref("organizations", organization_name)}
    if attachments is not None:
        relationships["workspace-tasks"] = refs("workspace-tasks", [a.id for a in attachments])
    return resource(
        "tasks",
        t.id,
        {
            "name": t.name,
            "url": t.url,
            "description": t.description,
            "category": t.category,
            "enabled": t.enabled,
            "hmac-key": None,  # write-only
            "global-configuration": t.global_configuration,  # null: never made global
        },
        relationships,
        links={"self": f"/api/v2/tasks/{t.id}"},
    )


def workspace_task(wt: WorkspaceTask) -> dict[str, Any]:
    return resource(
        "workspace-tasks",
        wt.id,
        {"enforcement-level": wt.enforcement_level, "stage": wt.stages[0], "stages": wt.stages},
        {"task": ref("tasks", wt.task_id), "workspace": ref("workspaces", wt.workspace_id)},
        links={"self": f"/api/v2/workspaces/{wt.workspace_id}/tasks/{wt.id}"},
    )


def task_result(r: TaskResult) -> dict[str, Any]:
    stage = ref("task-stages", r.stage_id)
    return resource(
        "task-results",
        r.id,
        {
            "status": r.status,
            "message": r.message,
            "status-timestamps": r.status_timestamps,
            "url": r.url,
            "created-at": r.created_at,
            "updated-at": r.updated_at,
            "task-id": r.task_id,
            "task-name": r.task_name,
            "task-url": r.task_url,
            "stage": r.stage,
            "is-speculative": False,
            "workspace-task-id": r.workspace_task_id,
            "workspace-task-enforcement-level": r.enforcement_level,
        },
        {
            "task-stage": stage,
            "task_stage": stage,
            "outcomes": {"data": [_outcome(r, i, o) for i, o in enumerate(r.outcomes)]},
        },
        links={"self": f"/api/v2/task-results/{r.id}"},
    )


def _outcome(r: TaskResult, index: int, outcome: dict[str, Any]) -> dict[str, Any]:
    return {"type": "task-result-outcomes", "id": f"{r.id}-{index + 1}", "attributes": outcome}


def _included_results(container: Container, principal: Principal, ids: list[str]) -> list[dict[str, Any]]:
    return [task_result(r) for r in container.task_results.of_ids(principal, ids)]


STAGE_INCLUDES["task_results"] = ("task-results", _included_results)
