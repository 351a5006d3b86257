"""Deleting an organization (DELETE /organizations/:name, the site admin's delete): a workflow across the
access area (the organization), the workspaces area (its workspaces) and what they hold (`Purge`)."""

from __future__ import annotations

from terrace.domain.errors import Conflict
from terrace.domain.principal import Principal
from terrace.services.access.authz import Action
from terrace.services.access.organizations import OrganizationService
from terrace.services.admin.site import SiteAdminService
from terrace.services.workflows.purge import Purge
from terrace.services.workspaces.module_test_workspaces import ModuleTestWorkspaces
from terrace.services.workspaces.workspaces import WorkspaceService

MAX_SWEEPS = 5


class OrganizationDeletion:
    """DELETE /organizations/:name: every workspace (its module test workspaces too) with what it holds, then what
    the organization holds beside them, and last the organization itself. Cut short, it leaves the organization in
    place; deleting it again finishes the job."""

    def __init__(
        self,
        organizations: OrganizationService,
        workspaces: WorkspaceService,
        purge: Purge,
        site_admin: SiteAdminService,
        module_tests: ModuleTestWorkspaces,
    ) -> None:
        self._orgs = organizations
        self._workspaces = workspaces
        self._purge = purge
        self._site_admin = site_admin
        self._module_tests = module_tests

    def delete_as_site_admin(self, principal: Principal, name: str) -> None:
        """The site admin API's delete: any organization (404 to anyone not a site admin), as its owners would."""
        self._site_admin.organization(principal, name)
        self.delete(principal, name)

    def delete(self, principal: Principal, name: str) -> None:
        org = self._orgs.get(principal, name, Action.DELETE_ORGANIZATION)
        for _ in range(MAX_SWEEPS):
            remaining = [*self._workspaces.all_in(org.key), *self._module_tests.of_organization(org.key)]
            if not remaining:
                break
            for ws in remaining:
                try:
                    self._workspaces.delete(principal, ws)
                except Conflict:
                    continue  # changed meanwhile: the next sweep reads it again
                self._purge.workspace_contents(ws.id, ws.organization)
        else:
            raise Conflict(f"organization {name} keeps changing while it is deleted; retry")
        self._purge.organization_contents(org.key)
        self._orgs.delete(principal, org)
