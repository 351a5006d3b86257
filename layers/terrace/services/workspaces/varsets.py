"""Variable sets of an organization: the sets themselves and where they apply (global, workspaces, projects).

A set is one item (its attachments are lists in it), so applying it to several workspaces or projects is one
conditional write: every id is checked first, and a bad one leaves the set as it was. The variables in a set
are `varset_variables.py`; what reaches a run (precedence) is `effective_variables.py`.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from terrace.domain import clock
from terrace.domain import varsets as model
from terrace.domain.errors import Invalid, NotFound
from terrace.domain.ids import new_id
from terrace.domain.organizations import Organization
from terrace.domain.principal import Principal
from terrace.domain.projects import Project, default_project_id
from terrace.domain.varsets import VariableSet, name_taken
from terrace.domain.workspace import Workspace
from terrace.services.access.authz import Action, Authorizer
from terrace.services.access.organizations import OrganizationService
from terrace.services.access.projects import ProjectService
from terrace.services.optimistic import optimistic
from terrace.services.workspaces.store_varsets import VariableSetStore, WriteOp
from terrace.services.workspaces.workspaces import WorkspaceService

MAX_ATTACHMENTS = 1000  # workspaces (and, apart, projects) one set may apply to: the item stays far below 400 KB


class VariableSetService:
    def __init__(
        self,
        store: VariableSetStore,
        authz: Authorizer,
        organizations: OrganizationService,
        workspaces: WorkspaceService,
        projects: ProjectService,
    ) -> None:
        self._store, self._authz, self._orgs = store, authz, organizations
        self._workspaces, self._projects = workspaces, projects

    # reads -------------------------------------------------------------------------------
    def load(self, varset_id: str) -> VariableSet:
        vs = self._store.find(varset_id)
        if vs is None:
            raise NotFound(f"variable set {varset_id} not found")
        return vs

    def all_in(self, org_key: str) -> builtins.list[VariableSet]:
        """Every set of an organization, by name (no permission check)."""
        return self._store.of_organization(org_key)

    def get(self, principal: Principal, varset_id: str, action: Action = Action.READ_VARSETS) -> VariableSet:
        """A set the caller may read (one they may not is not found, in the same words as an absent one)."""
        vs = self.load(varset_id)
        org = self._orgs.by_key(vs.organization)
        if not self._authz.can(principal, Action.READ_VARSETS, org.view):
            raise NotFound(f"variable set {varset_id} not found")
        if action is not Action.READ_VARSETS:
            self._authz.require(principal, action, org.view)
        return vs

    def list(self, principal: Principal, organization: str, query: str | None = None) -> builtins.list[VariableSet]:
        org = self._orgs.get(principal, organization, Action.READ_VARSETS)
        return _matching(self.all_in(org.key), query)

    def reaching(self, ws: Workspace) -> builtins.list[tuple[VariableSet, str]]:
        """The sets that apply to a workspace, each with its scope there (no permission check). None reaches a
        module's test workspace: a module's tests get its test variables only, never a global or project set's
        credentials (its managers may run code there that workspace access alone would not let them)."""
        if ws.module_id is not None:
            return []
        project_id = ws.project_id or default_project_id(ws.organization)
        found = [(vs, vs.scope_for(ws.id, project_id)) for vs in self.all_in(ws.organization)]
        return [(vs, scope) for vs, scope in found if scope is not None]

    def of_workspace(self, principal: Principal, ws: Workspace, query: str | None = None) -> builtins.list[VariableSet]:
        """GET /workspaces/:id/varsets: who may read the workspace's variables sees the sets that reach it."""
        self._workspaces.authorize(principal, Action.READ_VARIABLES, ws)
        return _matching([vs for vs, _ in self.reaching(ws)], query)

    def of_project(
        self, principal: Principal, project: Project, query: str | None = None
    ) -> builtins.list[VariableSet]:
        """GET /projects/:id/varsets: the sets applied to the project."""
        org = self._orgs.by_key(project.organization)
        self._authz.require(principal, Action.READ_VARSETS, org.view)
        return _matching([vs for vs in self.all_in(org.key) if project.id in vs.project_ids], query)

    # writes ------------------------------------------------------------------------------
    def create(
        self,
        principal: Principal,
        organization: str,
        attrs: dict[str, Any],
        workspace_ids: builtins.list[str] | None = None,
        project_ids: builtins.list[str] | None = None,
        more: Callable[[VariableSet], builtins.list[WriteOp]] | None = None,
    ) -> VariableSet:
        """A new set, applied to `workspace_ids` and `project_ids`, written in one transaction with the writes
        `more(set)` adds (its variables)."""
        org = self._orgs.get(principal, organization, Action.MANAGE_VARSETS)
        now = clock.now_iso()
        vs = VariableSet(
            id=new_id("varset"),
            organization=org.key,
            name=model.check_name(attrs.get("name")),
            description=model.check_description(attrs.get("description")),
            global_=model.check_flag(attrs, "global", False),
            priority=model.check_flag(attrs, "priority", False),
            workspace_ids=(),
            project_ids=(),
            created_at=now,
            updated_at=now,
            version=1,
        )
        vs = self._attached(vs, workspace_ids or [], project_ids or [], add=True)
        extra = more(vs) if more else []
        if not self._store.create(vs, extra):
            raise name_taken(vs.name)
        return vs

    def update(
        self,
        principal: Principal,
        varset_id: str,
        attrs: dict[str, Any],
        workspace_ids: builtins.list[str] | None = None,
    ) -> VariableSet:
        """PATCH /varsets/:id: name, description, global, priority; `workspace_ids` (not None) replaces the
        workspaces it applies to (go-tfe's UpdateWorkspaces)."""
        self.get(principal, varset_id, Action.MANAGE_VARSETS)

        def change(vs: VariableSet) -> VariableSet:
            name = model.check_name(attrs["name"]) if "name" in attrs else vs.name
            changed = replace(
                vs,
                name=name,
                description=model.check_description(attrs.get("description", vs.description)),
                global_=model.check_flag(attrs, "global", vs.global_),
                priority=model.check_flag(attrs, "priority", vs.priority),
            )
            if workspace_ids is not None:
                changed = self._attached(replace(changed, workspace_ids=()), workspace_ids, [], add=True)
            return changed

        return self._write(varset_id, change)

    def delete(self, principal: Principal, varset_id: str) -> None:
        self._store.delete(self.get(principal, varset_id, Action.MANAGE_VARSETS))

    def apply(self, principal: Principal, varset_id: str, kind: str, ids: builtins.list[str], *, add: bool) -> None:
        """POST/DELETE /varsets/:id/relationships/workspaces|projects: every id is checked before anything is
        written; an unknown (or another organization's) workspace or project is not found."""
        self.get(principal, varset_id, Action.MANAGE_VARSETS)
        workspaces, projects = (ids, []) if kind == "workspaces" else ([], ids)

        def change(vs: VariableSet) -> VariableSet:
            if vs.global_ and add:
                raise Invalid("a global variable set applies to every workspace; it cannot be applied to some",
                              pointer="/data")  # fmt: skip
            return self._attached(vs, workspaces, projects, add=add)

        self._write(varset_id, change)

    def forget_workspace(self, org_key: str, workspace_id: str) -> None:
        """A deleted workspace leaves every set it was applied to (no permission check)."""
        self._forget(org_key, lambda vs: workspace_id in vs.workspace_ids, workspaces=[workspace_id])

    def forget_project(self, org_key: str, project_id: str) -> None:
        """A deleted project leaves every set it was applied to (no permission check)."""
        self._forget(org_key, lambda vs: project_id in vs.project_ids, projects=[project_id])

    # helpers ------------------------------------------------------------------------------
    def _forget(
        self,
        org_key: str,
        holds: Callable[[VariableSet], bool],
        workspaces: builtins.list[str] | None = None,
        projects: builtins.list[str] | None = None,
    ) -> None:
        for vs in self.all_in(org_key):
            if holds(vs):
                self._write(vs.id, lambda cur: _detached(cur, workspaces or [], projects or []))

    def _attached(
        self, vs: VariableSet, workspaces: builtins.list[str], projects: builtins.list[str], *, add: bool
    ) -> VariableSet:
        for ws_id in workspaces:
            if self._workspace_org(ws_id) != vs.organization:
                raise NotFound(f"workspace {ws_id} not found")
        for prj_id in projects:
            self._projects.in_organization(vs.organization, prj_id)
        if not add:
            return _detached(vs, workspaces, projects)
        ws_ids = list(vs.workspace_ids) + [w for w in dict.fromkeys(workspaces) if w not in vs.workspace_ids]
        prj_ids = list(vs.project_ids) + [p for p in dict.fromkeys(projects) if p not in vs.project_ids]
        if len(ws_ids) > MAX_ATTACHMENTS or len(prj_ids) > MAX_ATTACHMENTS:
            raise Invalid(f"a variable set applies to at most {MAX_ATTACHMENTS} workspaces and projects",
                          pointer="/data")  # fmt: skip
        return replace(vs, workspace_ids=tuple(ws_ids), project_ids=tuple(prj_ids))

    def _workspace_org(self, ws_id: str) -> str | None:
        try:
            return self._workspaces.load(ws_id).organization
        except NotFound:
            return None

    def _write(self, varset_id: str, change: Callable[[VariableSet], VariableSet]) -> VariableSet:
        def step() -> VariableSet:
            current = self.load(varset_id)
            changed = change(current)
            changed = replace(changed, version=current.version + 1, updated_at=clock.now_iso())
            self._store.replace(changed, current)  # a name taken: Invalid; any other change: read again
            return changed

        return optimistic(step, attempts=8, backoff_s=0.01, exhausted="the variable set changed concurrently; retry")

    def organization_of(self, vs: VariableSet) -> Organization:
        return self._orgs.by_key(vs.organization)


def _detached(vs: VariableSet, workspaces: builtins.list[str], projects: builtins.list[str]) -> VariableSet:
    return replace(
        vs,
        workspace_ids=tuple(w for w in vs.workspace_ids if w not in workspaces),
        project_ids=tuple(p for p in vs.project_ids if p not in projects),
    )


def _matching(sets: builtins.list[VariableSet], query: str | None) -> builtins.list[VariableSet]:
    return [vs for vs in sets if not query or query.lower() in vs.name.lower()]
