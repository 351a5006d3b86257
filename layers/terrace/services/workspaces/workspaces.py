"""Workspaces: create, read, list, update, delete. Other services change a workspace through `mutate`."""

from __future__ import annotations

import builtins
import dataclasses
from collections.abc import Callable
from typing import Any

from terrace.adapters.table import ConditionFailed, Delete, Put, Table, WriteOp
from terrace.domain import clock, limits
from terrace.domain import workspace as model
from terrace.domain.errors import Conflict, Invalid, NotFound
from terrace.domain.ids import looks_like, new_id
from terrace.domain.principal import Principal
from terrace.domain.workspace import Workspace
from terrace.services.access.authz import Action, Authorizer, WorkspaceView
from terrace.services.access.organizations import Organization, OrganizationService
from terrace.services.access.permissions import default_project_id

# API attribute -> (field, validator)
_BOOL = lambda key: lambda v: _require_bool(key, v)  # noqa: E731
UPDATABLE: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "description": ("description", lambda v: limits.text(v, "description", limits.DESCRIPTION_MAX)),
    "execution-mode": ("execution_mode", lambda v: _require_choice("execution-mode", v, model.EXECUTION_MODES)),
    "auto-apply": ("auto_apply", _BOOL("auto-apply")),
    "terraform-version": ("terraform_version", model.validate_terraform_version),
    "working-directory": ("working_directory", model.validate_working_directory),
    "global-remote-state": ("global_remote_state", _BOOL("global-remote-state")),
    "queue-all-runs": ("queue_all_runs", _BOOL("queue-all-runs")),
    "speculative-enabled": ("speculative_enabled", _BOOL("speculative-enabled")),
    "allow-destroy-plan": ("allow_destroy_plan", _BOOL("allow-destroy-plan")),
}
# Attributes clients send that Terrace accepts and keeps but does not act on yet.
ACCEPTED_EXTRA = (
    "file-triggers-enabled",
    "trigger-prefixes",
    "source-name",
    "source-url",
    "assessments-enabled",
    "structured-run-output-enabled",
    "auto-destroy-at",
    "setting-overwrites",
    "operations",
)


def _require_bool(key: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise Invalid(f"{key} must be true or false", pointer=f"/data/attributes/{key}")
    return value


def _extra(key: str, value: Any) -> Any:
    """An accepted attribute Terrace keeps but does not act on: strings bounded, anything else by size."""
    if isinstance(value, str):
        return limits.text(value, key, limits.TEXT_ATTRIBUTE_MAX)
    return limits.bounded_json(value, key, limits.EXTRA_ATTRIBUTE_MAX_BYTES)


def _require_choice(key: str, value: Any, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise Invalid(f"{key} must be one of {', '.join(choices)}", pointer=f"/data/attributes/{key}")
    return str(value)


def view(ws: Workspace) -> WorkspaceView:
    return WorkspaceView(ws.id, ws.global_remote_state, ws.project_id)


class WorkspaceService:
    def __init__(self, table: Table, authz: Authorizer, organizations: OrganizationService) -> None:
        self._table = table
        self._authz = authz
        self._orgs = organizations

    # reads -------------------------------------------------------------------------------
    def load(self, workspace_id: str) -> Workspace:
        """Read without a permission check (for services that check on their own)."""
        item = self._table.get(*model.workspace_key(workspace_id)) if looks_like(workspace_id, "ws") else None
        if item is None:
            raise NotFound(f"workspace {workspace_id} not found")
        return model.from_item(item)

    def authorize(self, principal: Principal, action: Action, ws: Workspace) -> Organization:
        org = self._orgs.lookup(ws.organization)
        try:
            self._authz.require(principal, action, org.view, view(ws))
        except NotFound as exc:
            raise NotFound(f"workspace {ws.id} not found") from exc
        return org

    def get(self, principal: Principal, workspace_id: str, action: Action = Action.READ_WORKSPACE) -> Workspace:
        ws = self.load(workspace_id)
        self.authorize(principal, action, ws)
        return ws

    def get_by_name(
        self, principal: Principal, organization: str, name: str, action: Action = Action.READ_WORKSPACE
    ) -> Workspace:
        org = self._orgs.get(principal, organization)
        claim = self._table.get(*model.name_claim_key(org.name, name)) if model.NAME_RE.match(name or "") else None
        if claim is None:
            raise NotFound(f"workspace {organization}/{name} not found")
        return self.get(principal, claim["workspace_id"], action)

    def find_id(self, organization: str, name: str) -> str | None:
        claim = self._table.get(*model.name_claim_key(organization, name)) if model.NAME_RE.match(name or "") else None
        return claim["workspace_id"] if claim else None

    def list(
        self, principal: Principal, organization: str, search: str | None = None, tags: list[str] | None = None
    ) -> list[Workspace]:
        org = self._orgs.get(principal, organization)
        claims = self._table.query(f"org#{org.name}#wsnames")
        ids = [c["workspace_id"] for c in claims if not search or search.lower() in c["sk"].lower()]
        found = [model.from_item(item) for item in self._table.batch_get([model.workspace_key(i) for i in ids])]
        found = [ws for ws in found if not tags or set(tags) <= set(ws.tag_names)]
        found.sort(key=lambda ws: ws.name)
        return [ws for ws in found if self._authz.can(principal, Action.READ_WORKSPACE, org.view, view(ws))]

    def allowed(
        self, principal: Principal, action: Action, workspaces: builtins.list[Workspace]
    ) -> builtins.list[Workspace]:
        """The workspaces `principal` may do `action` in (one organization read per organization, not per row)."""
        orgs = {name: self._orgs.lookup(name) for name in {ws.organization for ws in workspaces}}
        return [ws for ws in workspaces if self._authz.can(principal, action, orgs[ws.organization].view, view(ws))]

    def in_project(self, organization: str, project_id: str) -> builtins.list[Workspace]:
        """The workspaces of a project (no permission check: for counting before a project is deleted)."""
        ids = [c["workspace_id"] for c in self._table.query(f"org#{organization}#wsnames")]
        found = [model.from_item(item) for item in self._table.batch_get([model.workspace_key(i) for i in ids])]
        default = default_project_id(organization)
        return [ws for ws in found if (ws.project_id or default) == project_id]

    def count(self, organization: str) -> int:
        return len(self._table.query(f"org#{organization}#wsnames"))

    def permissions(self, principal: Principal, ws: Workspace) -> dict[str, bool]:
        org = self._orgs.lookup(ws.organization)
        can = lambda action: self._authz.can(principal, action, org.view, view(ws))  # noqa: E731
        return {
            "can-update": can(Action.UPDATE_WORKSPACE),
            "can-destroy": can(Action.DELETE_WORKSPACE),
            "can-force-delete": can(Action.DELETE_WORKSPACE),
            "can-queue-run": can(Action.QUEUE_RUN),
            "can-queue-destroy": can(Action.QUEUE_RUN),
            "can-queue-apply": can(Action.APPLY_RUN),
            "can-read-settings": can(Action.READ_WORKSPACE),
            "can-update-variable": can(Action.WRITE_VARIABLES),
            "can-read-variable": can(Action.READ_VARIABLES),
            "can-lock": can(Action.LOCK_WORKSPACE),
            "can-unlock": can(Action.LOCK_WORKSPACE),
            "can-force-unlock": can(Action.FORCE_UNLOCK),
            "can-read-state-versions": can(Action.READ_STATE),
            "can-read-state-outputs": can(Action.READ_STATE_OUTPUTS),
            "can-create-state-versions": can(Action.WRITE_STATE),
            "can-manage-tags": can(Action.UPDATE_WORKSPACE),
            "can-manage-run-tasks": False,
            "can-manage-assessments": False,
            "can-read-assessment-results": False,
            "can-change-settings": can(Action.UPDATE_WORKSPACE),
        }

    # writes ------------------------------------------------------------------------------
    def create(
        self,
        principal: Principal,
        organization: str,
        attributes: dict[str, Any],
        tag_names: builtins.list[str] | None = None,
        project_id: str | None = None,
    ) -> Workspace:
        org = self._orgs.get(principal, organization, Action.CREATE_WORKSPACE)
        name = model.validate_name(attributes.get("name"))
        now = clock.now_iso()
        ws = Workspace(
            id=new_id("ws"),
            name=name,
            organization=org.name,
            created_at=now,
            updated_at=now,
            version=1,
            execution_mode=org.default_execution_mode,
            tag_names=tuple(_tags(tag_names or [])),
            project_id=project_id,
        )
        ws = _apply_attributes(ws, {k: v for k, v in attributes.items() if k != "name"})
        claim = {"pk": model.name_claim_key(org.name, name)[0], "sk": name, "workspace_id": ws.id}
        try:
            self._table.transact([Put(claim, if_absent=True), Put(model.to_item(ws), if_absent=True)])
        except ConditionFailed as exc:
            raise Conflict(
                f"workspace {org.name}/{name} already exists", meta={"pointer": "/data/attributes/name"}
            ) from exc
        return ws

    def update(self, principal: Principal, ws: Workspace, attributes: dict[str, Any]) -> Workspace:
        self.authorize(principal, Action.UPDATE_WORKSPACE, ws)
        new_name = attributes.get("name", ws.name)
        if new_name != ws.name:
            return self._rename(ws, model.validate_name(new_name), attributes)
        return self.mutate(ws.id, lambda current: _apply_attributes(current, attributes))

    def move(self, principal: Principal, ws: Workspace, project_id: str) -> Workspace:
        """Put a workspace in another project of its organization (the caller checked the project's)."""
        self.authorize(principal, Action.UPDATE_WORKSPACE, ws)
        return self.mutate(ws.id, lambda current: dataclasses.replace(current, project_id=project_id))

    def add_tags(self, principal: Principal, ws: Workspace, names: builtins.list[str]) -> Workspace:
        self.authorize(principal, Action.UPDATE_WORKSPACE, ws)
        tags = _tags(names)
        return self.mutate(
            ws.id, lambda cur: dataclasses.replace(cur, tag_names=tuple(sorted({*cur.tag_names, *tags})))
        )

    def delete(
        self,
        principal: Principal,
        ws: Workspace,
        *,
        safe: bool = False,
        extra_ops: Callable[[Workspace], builtins.list[WriteOp]] | None = None,
    ) -> None:
        self.authorize(principal, Action.DELETE_WORKSPACE, ws)
        if safe and ws.resource_count > 0:
            raise Conflict(f"workspace {ws.name} still manages {ws.resource_count} resources; destroy them first")
        if ws.locked:
            raise Conflict(f"workspace {ws.name} is locked; unlock it before deleting")
        ops: list[WriteOp] = [
            Delete(*model.workspace_key(ws.id), if_version=ws.version),
            Delete(*model.name_claim_key(ws.organization, ws.name)),
        ]
        try:
            self._table.transact(ops + (extra_ops(ws) if extra_ops else []))
        except ConditionFailed as exc:
            raise Conflict("workspace changed while deleting; retry") from exc

    def mutate(self, workspace_id: str, change: Callable[[Workspace], Workspace], attempts: int = 8) -> Workspace:
        """Apply `change` to the latest copy with optimistic concurrency; `change` may raise to refuse."""
        for _ in range(attempts):
            current = self.load(workspace_id)
            updated = dataclasses.replace(change(current), version=current.version + 1, updated_at=clock.now_iso())
            try:
                self._table.put(model.to_item(updated), if_version=current.version)
                return updated
            except ConditionFailed:
                continue
        raise Conflict(f"workspace {workspace_id} is busy; retry")

    def write_if_unchanged(self, current: Workspace, updated: Workspace) -> Workspace:
        """Store `updated` (a change of the loaded `current`) in one conditional write; ConditionFailed when
        someone changed it since. For the hot path where a re-read would be wasted (`mutate` re-reads)."""
        stored = dataclasses.replace(updated, version=current.version + 1, updated_at=clock.now_iso())
        self._table.put(model.to_item(stored), if_version=current.version)
        return stored

    def write_op(self, ws: Workspace, expected_version: int) -> Put:
        """A transaction item that stores `ws` only if nobody changed it since `expected_version`."""
        return Put(model.to_item(ws), if_version=expected_version)

    def _rename(self, ws: Workspace, name: str, attributes: dict[str, Any]) -> Workspace:
        updated = _apply_attributes(ws, {k: v for k, v in attributes.items() if k != "name"})
        updated = dataclasses.replace(updated, name=name, version=ws.version + 1, updated_at=clock.now_iso())
        claim = {"pk": model.name_claim_key(ws.organization, name)[0], "sk": name, "workspace_id": ws.id}
        try:
            self._table.transact(
                [
                    Put(claim, if_absent=True),
                    Delete(*model.name_claim_key(ws.organization, ws.name)),
                    Put(model.to_item(updated), if_version=ws.version),
                ]
            )
        except ConditionFailed as exc:
            raise Conflict(f"workspace {ws.organization}/{name} already exists or changed; retry") from exc
        return updated


def _tags(names: list[Any]) -> list[str]:
    for name in names:
        if not isinstance(name, str) or not model.NAME_RE.match(name.replace(":", "-")):
            raise Invalid("tag names are letters, digits, -, _ and :", pointer="/data/relationships/tags")
    return [str(n).lower() for n in names]


def _apply_attributes(ws: Workspace, attributes: dict[str, Any]) -> Workspace:
    changes: dict[str, Any] = {}
    extra = dict(ws.extra)
    for key, value in attributes.items():
        if key in UPDATABLE:
            field_name, validate = UPDATABLE[key]
            changes[field_name] = validate(value)
        elif key == "operations":
            changes["execution_mode"] = "remote" if _require_bool(key, value) else "local"
        elif key == "tag-names":
            changes["tag_names"] = tuple(_tags(value if isinstance(value, list) else [value]))
        elif key in ACCEPTED_EXTRA:
            extra[key] = _extra(key, value)
        elif key == "name":
            continue
        else:
            raise Invalid(f"unknown or read-only attribute {key!r}", pointer=f"/data/attributes/{key}")
    return dataclasses.replace(ws, extra=extra, **changes)
