"""Workspaces: create, read, list, update, delete. Other services change a workspace through `mutate` and the
other conditional writes of `workspace_writes.py`; what it inherits from its project is `project_defaults.py`."""

from __future__ import annotations

import builtins
import dataclasses
from collections.abc import Callable
from typing import Any

from terrace.domain import assessments, clock, limits
from terrace.domain import workspace as model
from terrace.domain.errors import Conflict, Invalid, NotFound
from terrace.domain.organizations import Organization
from terrace.domain.principal import Principal
from terrace.domain.projects import default_project_id
from terrace.domain.tags import tagged
from terrace.domain.tool_versions import TOOL_ATTRIBUTE
from terrace.domain.workspace import Workspace
from terrace.services.access.authz import Action, Authorizer
from terrace.services.access.organizations import OrganizationService
from terrace.services.access.projects import ProjectService
from terrace.services.workspaces.attributes import apply_attributes, tag_names, with_tool
from terrace.services.workspaces.project_defaults import ProjectDefaults
from terrace.services.workspaces.repository_link import RepositoryLink, linked
from terrace.services.workspaces.store import WorkspaceStore, WriteOp
from terrace.services.workspaces.workspace_permissions import permissions, view
from terrace.services.workspaces.workspace_writes import WorkspaceWrites


class WorkspaceService(ProjectDefaults, WorkspaceWrites):
    def __init__(
        self,
        store: WorkspaceStore,
        authz: Authorizer,
        organizations: OrganizationService,
        projects: ProjectService,
        *,
        settle_terraform_version: Callable[[Any, str], Any],
        tool_for: Callable[[str], str] = lambda _requested: "terraform",
        check_agent_pool: Callable[[Workspace], None],
        secure_hyok: Callable[[Workspace], Workspace] | None = None,
        locked_tag_keys: Callable[[str], set[str]],
        remote_state_default: Callable[[], bool] = lambda: False,
        repository_link: RepositoryLink | None = None,
        opened: Callable[[Principal, Workspace], None] = lambda _principal, _ws: None,
    ) -> None:
        # a caller opened a workspace (`open_by_name`): the runs area's warm window (`services/runs/warm_window.py`)
        self._opened = opened
        self._remote_state_default = remote_state_default  # the site admin's default-remote-state-access
        self._store = store
        self._authz = authz
        self._orgs = organizations
        self._projects = projects
        self.markers = store.markers
        # the terraform-version to store for what a client asks, of a workspace's tool (ToolVersionService.settle)
        self.settle_terraform_version = settle_terraform_version
        # the tool a terraform-version resolves to, the deployment's default tool first (ToolVersionService.tool_for)
        self._tool_for = tool_for
        # refuses (422) an agent-mode workspace whose pool is absent or does not allow it (AgentPoolBindings)
        self.check_agent_pool = check_agent_pool
        # a workspace with hyok-enabled: its organization's primary HYOK configuration's agents run it (HyokStateKeys)
        self._secure_hyok = secure_hyok
        self._link = repository_link  # connects `vcs-repo` (the VCS area)
        # the reserved tag keys with disable-overrides of an organization (ReservedTagKeyService.locked_keys)
        self.locked_tag_keys = locked_tag_keys

    # reads -------------------------------------------------------------------------------
    def load(self, workspace_id: str) -> Workspace:
        """Read without a permission check (for services that check on their own)."""
        ws = self._store.find(workspace_id)
        if ws is None:
            raise NotFound(f"workspace {workspace_id} not found")
        return ws

    def organization_of(self, ws: Workspace) -> Organization:
        return self._orgs.by_key(ws.organization)

    def authorize(self, principal: Principal, action: Action, ws: Workspace) -> Organization:
        org = self._orgs.by_key(ws.organization)
        try:
            self._authz.require(principal, action, org.view, view(ws))
        except NotFound as exc:
            raise NotFound(f"workspace {ws.id} not found") from exc
        return org

    def can(self, principal: Principal, action: Action, ws: Workspace) -> bool:
        return self._authz.can(principal, action, self._orgs.by_key(ws.organization).view, view(ws))

    def get(self, principal: Principal, workspace_id: str, action: Action = Action.READ_WORKSPACE) -> Workspace:
        ws = self.load(workspace_id)
        if ws.module_id is not None:  # a module's test workspace: reached through its module's tests only
            raise NotFound(f"workspace {workspace_id} not found")
        self.authorize(principal, action, ws)
        return ws

    def open_by_name(self, principal: Principal, organization: str, name: str) -> Workspace:
        """`get_by_name` for a caller opening the workspace (`terraform init`'s read, its UI page): a run may follow,
        which `opened` is told of once the read was allowed."""
        ws = self.get_by_name(principal, organization, name)
        self._opened(principal, ws)
        return ws

    def get_by_name(
        self, principal: Principal, organization: str, name: str, action: Action = Action.READ_WORKSPACE
    ) -> Workspace:
        org = self._orgs.get(principal, organization)
        workspace_id = self._store.id_named(org.key, name) if model.NAME_RE.match(name or "") else None
        missing = NotFound(f"workspace {organization}/{name} not found")
        if workspace_id is None:
            raise missing
        try:
            return self.get(principal, workspace_id, action)
        except NotFound as exc:  # hidden answers as absent: the same words, never the workspace's id
            raise missing from exc

    def find_id(self, organization: str, name: str) -> str | None:
        """The id of workspace `name` of the organization named `organization` (None when either is unknown)."""
        try:
            key = self._orgs.lookup(organization).key
        except NotFound:
            return None
        return self._store.id_named(key, name) if model.NAME_RE.match(name or "") else None

    def list(
        self,
        principal: Principal,
        organization: str,
        search: str | None = None,
        tags: list[str] | None = None,
        exclude_tags: list[str] | None = None,
        bindings: list[tuple[str, str | None]] | None = None,
    ) -> list[Workspace]:
        """Sorted by name. `tags`: all of them; `exclude_tags`: none of them; `bindings`: every (key, value)
        tag binding (value None: any value)."""
        org = self._orgs.get(principal, organization)
        found = self.all_in(org.key, search)
        if tags or exclude_tags or bindings:  # what a workspace inherits from its project counts as its own
            inherited = self._projects.bindings_in(org.key)
            held = {ws.id: inherited.get(self.project_of(ws), ()) for ws in found}
            found = [ws for ws in found if tagged(ws, held[ws.id], tags or [], exclude_tags or [], bindings or [])]
        return [ws for ws in found if self._authz.can(principal, Action.READ_WORKSPACE, org.view, view(ws))]

    def organization_grant(self, principal: Principal, organization: str, action: Action) -> tuple[str, bool]:
        """The organization's name (NotFound unless the principal may read it) and whether it grants `action` on
        its workspaces at organization level."""
        org = self._orgs.get(principal, organization)
        return org.name, self._authz.can(principal, action, org.view)

    def all_in(self, org_key: str, search: str | None = None) -> builtins.list[Workspace]:
        """Every workspace of an organization (by storage key), sorted by name; no permission check."""
        ids = [i for name, i in self._store.names(org_key) if not search or search.lower() in name.lower()]
        return sorted(self._store.load_many(ids), key=lambda ws: ws.name)

    def ids_in(self, org_key: str) -> builtins.list[str]:
        """The ids of an organization's workspaces (by storage key), by name; no permission check."""
        return [workspace_id for _, workspace_id in self._store.names(org_key)]

    def allowed(
        self, principal: Principal, action: Action, workspaces: builtins.list[Workspace]
    ) -> builtins.list[Workspace]:
        """The workspaces `principal` may do `action` in (one organization read per organization, not per row)."""
        orgs = {key: self._orgs.by_key(key) for key in {ws.organization for ws in workspaces}}
        return [ws for ws in workspaces if self._authz.can(principal, action, orgs[ws.organization].view, view(ws))]

    def in_project(self, organization: str, project_id: str) -> builtins.list[Workspace]:
        """The workspaces of a project (no permission check: for counting before a project is deleted)."""
        found = self._store.load_many(self.ids_in(organization))
        default = default_project_id(organization)
        return [ws for ws in found if (ws.project_id or default) == project_id]

    def count(self, organization: str) -> int:
        return len(self._store.names(organization))

    def permissions(self, principal: Principal, ws: Workspace) -> dict[str, bool]:
        """The workspace's `permissions` attribute: what `principal` may do in it."""
        org = self._orgs.by_key(ws.organization)
        return permissions(lambda action: self._authz.can(principal, action, org.view, view(ws)))

    # writes ------------------------------------------------------------------------------
    def create(
        self,
        principal: Principal,
        organization: str,
        attributes: dict[str, Any],
        tags: builtins.list[str] | None = None,
        bindings: tuple[tuple[str, str], ...] = (),
        project_id: str | None = None,
        *,
        client: str = "",
    ) -> Workspace:
        """`client`: the tool of the CLI whose `cloud` block creates it, its tool (`with_tool`)."""
        org = self._orgs.get(principal, organization, Action.CREATE_WORKSPACE)
        if project_id is not None:  # one of its organization's, or not found
            project_id = self._projects.in_organization(org.key, project_id).id
        name = model.validate_name(attributes.get("name"))
        if org.settings.get("enforce-hyok") is True:  # Hold Your Own Key for every new workspace
            if attributes.get("hyok-enabled") is False:
                raise Invalid(
                    "hyok-enabled: the organization enforces Hold Your Own Key", pointer="/data/attributes/hyok-enabled"
                )
            attributes = {**attributes, "hyok-enabled": True}
        ws = model.new_workspace(
            name,
            org.key,
            org.default_execution_mode,
            tag_names=tuple(tag_names(tags or [])),
            tag_bindings=bindings,
            project_id=project_id,
            global_remote_state=self._remote_state_default(),  # the site admin's default-remote-state-access
        )
        attributes = with_tool(attributes, client, self._tool_for)
        attributes = linked(self._link, principal, ws, attributes)  # the webhook registered before the write
        ws = self._checked(apply_attributes(ws, self._settled({k: v for k, v in attributes.items() if k != "name"})))
        if not self._store.create(ws):
            if self._link is not None and "vcs-repo" in attributes:
                self._link.disconnect(ws)
            raise Conflict(f"workspace {org.name}/{name} already exists", meta={"pointer": "/data/attributes/name"})
        if ws.auto_destroy_at is not None:
            self.markers.sync(ws)
        return ws

    def update(self, principal: Principal, ws: Workspace, attributes: dict[str, Any]) -> Workspace:
        self.authorize(principal, Action.UPDATE_WORKSPACE, ws)
        attributes = linked(self._link, principal, ws, self._settled(attributes, ws.tool))
        new_name = attributes.get("name", ws.name)
        if new_name != ws.name:
            updated = self._rename(ws, model.validate_name(new_name), attributes)
        else:
            updated = self.mutate(ws.id, lambda current: self._checked(apply_attributes(current, attributes)))
        if updated.auto_destroy_at != ws.auto_destroy_at:
            self.markers.sync(updated)
        if assessments.ENABLED_ATTRIBUTE in attributes:
            self._store.schedule_assessments(updated)
        return updated

    def _checked(self, ws: Workspace) -> Workspace:
        if ws.extra.get("hyok-enabled") is True:
            if self._secure_hyok is None:
                raise Invalid("this server does not encrypt state with customer keys", pointer="/data/attributes")
            ws = self._secure_hyok(ws)
        if ws.agent_pool_id or ws.execution_mode == "agent":
            self.check_agent_pool(ws)
        self.check_tag_bindings(ws)
        return ws

    def _settled(self, attributes: dict[str, Any], tool: str = "") -> dict[str, Any]:
        if "terraform-version" not in attributes:
            return attributes
        tool = str(attributes.get(TOOL_ATTRIBUTE) or tool)
        return {**attributes, "terraform-version": self.settle_terraform_version(attributes["terraform-version"], tool)}

    def tool_of(self, ws: Workspace) -> str:
        """The tool the runs of `ws` use (`iac-platform`): its own, or for a workspace stored before workspaces
        had one, what its runs resolve its terraform-version to (the deployment's default tool first)."""
        return ws.tool or self._tool_for(ws.terraform_version)

    def move_all(self, principal: Principal, workspace_ids: builtins.list[str], project_id: str) -> None:
        """POST /projects/:id/relationships/workspaces: every workspace is read and checked before any moves."""
        if len(workspace_ids) > limits.WORKSPACES_MOVED_MAX:
            raise Invalid(f"at most {limits.WORKSPACES_MOVED_MAX} workspaces move at once", pointer="/data")
        targets = [self.get(principal, ws_id, Action.UPDATE_WORKSPACE) for ws_id in workspace_ids]
        project = self._projects.get(principal, project_id)
        for ws in targets:
            self._projects.in_organization(ws.organization, project.id)
        for ws in targets:
            self.move(principal, ws, project.id)

    def move(self, principal: Principal, ws: Workspace, project_id: str) -> Workspace:
        """Put a workspace in another project of its organization (another organization's is not found)."""
        self.authorize(principal, Action.UPDATE_WORKSPACE, ws)
        project_id = self._projects.in_organization(ws.organization, project_id).id

        def change(current: Workspace) -> Workspace:
            moved = dataclasses.replace(current, project_id=project_id)
            self.check_tag_bindings(moved)  # its bindings against the new project's locked keys
            return moved

        return self.mutate(ws.id, change)

    def delete(
        self,
        principal: Principal,
        ws: Workspace,
        *,
        safe: bool = False,
        extra_ops: Callable[[Workspace], builtins.list[WriteOp]] | None = None,
    ) -> None:
        """Delete the workspace item and its name claim (a locked one too: TFC's force delete). `safe` refuses,
        as TFC's safe-delete does, while its current state manages resources or while it is locked. What it held
        is deleted afterwards (`Purge`)."""
        self.authorize(principal, Action.DELETE_WORKSPACE, ws)
        if safe and ws.resource_count > 0:
            raise Conflict(f"workspace {ws.name} still manages {ws.resource_count} resources; destroy them first")
        if safe and ws.locked:
            raise Conflict(f"workspace {ws.name} is currently locked; unlock it or delete it without safe-delete")
        if not self._store.delete(ws, extra_ops(ws) if extra_ops else []):
            raise Conflict("workspace changed while deleting; retry")

    def _rename(self, ws: Workspace, name: str, attributes: dict[str, Any]) -> Workspace:
        updated = self._checked(apply_attributes(ws, {k: v for k, v in attributes.items() if k != "name"}))
        updated = dataclasses.replace(updated, name=name, version=ws.version + 1, updated_at=clock.now_iso())
        if not self._store.rename(ws.name, updated, ws.version):
            org_name = self._orgs.name_of(ws.organization)
            raise Conflict(f"workspace {org_name}/{name} already exists or changed; retry")
        return updated
