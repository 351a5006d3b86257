"""What a workspace inherits from its project (mixed into `WorkspaceService`): the execution mode and agent pool
when it does not overwrite them (the project's defaults, else its organization's), its project's tag bindings, and
the rule on them: a key the organization reserves with disable-overrides keeps its project's value."""

from __future__ import annotations

from collections.abc import Callable

from terrace.domain.agent_pools import execution_mode_of, pool_of
from terrace.domain.errors import Invalid, NotFound
from terrace.domain.projects import DEFAULT_PROJECT, Project, default_project_id
from terrace.domain.tags import check_count
from terrace.domain.workspace import Workspace
from terrace.services.access.organizations import OrganizationService
from terrace.services.access.projects import ProjectService


class ProjectDefaults:
    _orgs: OrganizationService
    _projects: ProjectService
    locked_tag_keys: Callable[[str], set[str]]
    load: Callable[[str], Workspace]

    def execution_mode(self, ws: Workspace) -> str:
        """Where `ws`'s runs execute: its own mode when it overwrote it, else its organization's default."""
        if ws.overwrites_execution_mode:  # its own: neither its project nor its organization is read
            return ws.execution_mode
        return execution_mode_of(ws, self._orgs.by_key(ws.organization), self.project(ws))

    def agent_pool(self, ws: Workspace) -> str | None:
        """The pool `ws`'s runs wait for (None unless its execution mode is `agent`)."""
        return pool_of(ws, self._orgs.by_key(ws.organization), self.defaults_from(ws))

    def defaults_from(self, ws: Workspace) -> Project | None:
        """The project whose execution defaults `ws` inherits (None when it overwrites them: nothing is read)."""
        return None if ws.overwrites_execution_mode else self.project(ws)

    def projects_in(self, org_key: str) -> dict[str, Project]:
        """The organization's projects by id (one query: what a page of its workspaces inherits)."""
        return self._projects.all_in(org_key)

    def project(self, ws: Workspace) -> Project:
        """Its project (the Default Project when it names none), without a permission check."""
        return self._projects.load(self.project_of(ws))

    def project_name_of(self, ws: Workspace) -> str:
        """The name of the workspace's project (its organization's Default Project when it names none)."""
        try:
            return self._projects.load(self.project_of(ws)).name
        except NotFound:
            return DEFAULT_PROJECT

    def project_of_id(self, workspace_id: str) -> str | None:
        """The project of workspace `workspace_id` (None when it is gone), without a permission check."""
        try:
            return self.project_of(self.load(workspace_id))
        except NotFound:
            return None

    def project_of(self, ws: Workspace) -> str:
        return ws.project_id or default_project_id(ws.organization)

    def inherited_bindings(self, ws: Workspace) -> tuple[tuple[str, str], ...]:
        """The tag bindings `ws` inherits from its project."""
        return self._projects.load(self.project_of(ws)).tag_bindings

    def check_tag_bindings(self, ws: Workspace) -> None:
        """A workspace may not bind a key its project binds to another value when the organization reserves the
        key with disable-overrides (422)."""
        check_count(ws.tag_bindings)
        locked = self.locked_tag_keys(ws.organization) if ws.tag_bindings else set()
        inherited = dict(self.inherited_bindings(ws)) if locked else {}
        for key, value in ws.tag_bindings:
            if key in locked and key in inherited and inherited[key] != value:
                raise Invalid(f"Tag binding {key} is reserved and inherited from the project: it cannot be "
                              "overridden", pointer="/data/relationships/tag-bindings")  # fmt: skip
