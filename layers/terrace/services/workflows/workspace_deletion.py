"""Deleting a workspace (DELETE /workspaces/:id and by name, safe-delete, the UI's settings page, the site
admin's delete): a workflow across the runs area (its runs end first, and the run lock with them), the
workspaces area (the workspace item and its name claim) and what it held (`Purge`: runs, configuration
versions, variables, state versions)."""

from __future__ import annotations

from terrace.domain.principal import Principal
from terrace.domain.workspace import Workspace
from terrace.services.admin.site import SiteAdminService
from terrace.services.runs.runs import RunService
from terrace.services.workflows.purge import Purge
from terrace.services.workspaces.workspaces import WorkspaceService


class WorkspaceDeletion:
    def __init__(
        self, workspaces: WorkspaceService, runs: RunService, purge: Purge, site_admin: SiteAdminService
    ) -> None:
        self._workspaces, self._runs, self._purge, self._site_admin = workspaces, runs, purge, site_admin

    def delete_by_id(self, principal: Principal, workspace_id: str, *, safe: bool = False) -> None:
        self.delete(principal, self._workspaces.get(principal, workspace_id), safe=safe)

    def delete_by_name(self, principal: Principal, organization: str, name: str, *, safe: bool = False) -> None:
        self.delete(principal, self._workspaces.get_by_name(principal, organization, name), safe=safe)

    def delete_as_site_admin(self, principal: Principal, workspace_id: str) -> None:
        """The site admin API's delete: any workspace (404 to anyone not a site admin), as its owners would."""
        self._site_admin.workspace(principal, workspace_id)
        self.delete_by_id(principal, workspace_id)

    def delete(self, principal: Principal, ws: Workspace, *, safe: bool = False) -> None:
        """End its runs (and their lock with them), delete the workspace (re-read: ending runs changed it), then
        what it held. `safe` refuses while it manages resources or a user holds its lock (`Conflict`)."""
        self._runs.end_for_deletion(principal, ws, safe=safe)
        self._workspaces.delete(principal, self._workspaces.load(ws.id), safe=safe)
        self._purge.workspace_contents(ws.id, ws.organization)
