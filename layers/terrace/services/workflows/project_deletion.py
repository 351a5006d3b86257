"""Deleting a project (DELETE /projects/:id): a workflow across the access area (the project, refused while it
holds workspaces), the workspaces area (the workspace count, and the variable sets it leaves) and its notification
configurations."""

from __future__ import annotations

from terrace.domain.principal import Principal
from terrace.services.access.projects import ProjectService
from terrace.services.notifications.configurations import NotificationConfigurations
from terrace.services.workspaces.varsets import VariableSetService
from terrace.services.workspaces.workspaces import WorkspaceService


class ProjectDeletion:
    def __init__(
        self,
        projects: ProjectService,
        workspaces: WorkspaceService,
        varsets: VariableSetService,
        notifications: NotificationConfigurations,
    ) -> None:
        self._projects, self._workspaces, self._varsets = projects, workspaces, varsets
        self._notifications = notifications

    def delete(self, principal: Principal, project_id: str) -> None:
        project = self._projects.get(principal, project_id)
        count = len(self._workspaces.in_project(project.organization, project.id))
        self._projects.delete(principal, project_id, count)
        self._varsets.forget_project(project.organization, project.id)
        self._notifications.delete_all(project.id)
