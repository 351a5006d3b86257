"""What the authorizer sees of a workspace (`view`), and the workspace's `permissions` attribute: each key the TFC
API answers with, and the action that grants it (None: never granted here)."""

from __future__ import annotations

from collections.abc import Callable

from terrace.domain.projects import default_project_id
from terrace.domain.workspace import Workspace, WorkspaceView
from terrace.services.access.authz import Action

PERMISSIONS: dict[str, Action | None] = {
    "can-update": Action.UPDATE_WORKSPACE,
    "can-destroy": Action.DELETE_WORKSPACE,
    "can-force-delete": Action.DELETE_WORKSPACE,
    "can-queue-run": Action.QUEUE_RUN,
    "can-queue-destroy": Action.QUEUE_RUN,
    "can-queue-apply": Action.APPLY_RUN,
    "can-read-settings": Action.READ_WORKSPACE,
    "can-update-variable": Action.WRITE_VARIABLES,
    "can-read-variable": Action.READ_VARIABLES,
    "can-lock": Action.LOCK_WORKSPACE,
    "can-unlock": Action.LOCK_WORKSPACE,
    "can-force-unlock": Action.FORCE_UNLOCK,
    "can-read-state-versions": Action.READ_STATE,
    "can-read-state-outputs": Action.READ_STATE_OUTPUTS,
    "can-create-state-versions": Action.WRITE_STATE,
    "can-manage-tags": Action.UPDATE_WORKSPACE,
    "can-manage-run-tasks": Action.MANAGE_WORKSPACE_RUN_TASKS,
    "can-manage-assessments": None,
    "can-read-assessment-results": None,
    "can-change-settings": Action.UPDATE_WORKSPACE,
}


def view(ws: Workspace) -> WorkspaceView:
    """The workspace as the authorizer decides on it: its project, remote state sharing and module."""
    project_id = ws.project_id or default_project_id(ws.organization)
    return WorkspaceView(
        ws.id,
        ws.global_remote_state,
        project_id,
        frozenset(ws.remote_state_consumers),
        project_remote_state=ws.project_remote_state,
        module_id=ws.module_id,
    )


def permissions(can: Callable[[Action], bool]) -> dict[str, bool]:
    """The `permissions` attribute, `can` telling whether the caller may do an action in the workspace."""
    return {key: action is not None and can(action) for key, action in PERMISSIONS.items()}
