"""Storage of workspaces: the workspace item (`ws-…` / `ws`, listed under gsi1 `org#<org key>#workspaces` by name),
its name claim (`org#<org key>#wsnames` / name -> workspace id: names are unique in an organization, and the claims
are what lists an organization's workspaces), its lock inside it, and the two sparse indexes written beside it:
the auto-destroy marker (`store_auto_destroy.py`) and the health assessment schedule (`domain/assessments.py`).

`WorkspaceAreaStore` gathers the stores of the area (`store_*.py`, each owning its keys) and deletes what a
workspace or an organization holds of it (`delete_all_of`, for `services/workflows/purge.py`)."""

from __future__ import annotations

from typing import Any

from terrace.adapters.table import ConditionFailed, Delete, Put, Table, WriteOp
from terrace.domain import assessments, clock
from terrace.domain.ids import looks_like
from terrace.domain.workspace import Workspace, WorkspaceLock
from terrace.services import shared_keys
from terrace.services.workspaces.store_agent_pools import AgentPoolStore
from terrace.services.workspaces.store_auto_destroy import AutoDestroyMarkers
from terrace.services.workspaces.store_change_requests import ChangeRequestStore
from terrace.services.workspaces.store_run_triggers import RunTriggerStore
from terrace.services.workspaces.store_ssh_keys import SSHKeyStore
from terrace.services.workspaces.store_tags import ReservedTagKeyStore, TagStore
from terrace.services.workspaces.store_variables import VariableStore
from terrace.services.workspaces.store_varsets import VariableSetStore

__all__ = ["WorkspaceAreaStore", "WorkspaceStore", "WriteOp"]

SORT_KEY = "ws"

_SIMPLE = (
    "description",
    "execution_mode",
    "auto_apply",
    "auto_apply_run_trigger",
    "terraform_version",
    "tool",
    "working_directory",
    "global_remote_state",
    "project_remote_state",
    "queue_all_runs",
    "speculative_enabled",
    "allow_destroy_plan",
    "current_state_version_id",
    "state_serial",
    "state_lineage",
    "state_md5",
    "current_run_id",
    "latest_run_id",
    "resource_count",
    "runs_count",
    "created_ns",
    "execution_mode_overwritten",
    "project_id",
    "agent_pool_id",
    "auto_destroy_at",
    "auto_destroy_activity_duration",
    "health",
    "module_id",
)


def workspace_key(workspace_id: str) -> tuple[str, str]:
    return workspace_id, SORT_KEY


def name_claims(org_key: str) -> str:
    return f"org#{org_key}#wsnames"


def from_item(item: dict[str, Any]) -> Workspace:
    if "auto_apply_run_trigger" not in item:  # stored before it was a field: kept as sent, in `extra`
        item = {**item, "auto_apply_run_trigger": (item.get("extra") or {}).get("auto-apply-run-trigger") is True}
    lock = item.get("lock")
    return Workspace(
        id=item["id"],
        name=item["name"],
        organization=item["organization"],
        created_at=item["created_at"],
        updated_at=item.get("updated_at", item["created_at"]),
        version=int(item["version"]),
        tag_names=tuple(item.get("tag_names", [])),
        tag_bindings=tuple((str(k), str(v)) for k, v in item.get("tag_bindings", [])),
        remote_state_consumers=tuple(item.get("remote_state_consumers", [])),
        lock=WorkspaceLock(**lock) if lock else None,
        extra=dict(item.get("extra", {})),
        **{name: item[name] for name in _SIMPLE if item.get(name) is not None},
    )


def to_item(ws: Workspace) -> dict[str, Any]:
    pk, sk = workspace_key(ws.id)
    item: dict[str, Any] = {
        "pk": pk,
        "sk": sk,
        "id": ws.id,
        "name": ws.name,
        "organization": ws.organization,
        "created_at": ws.created_at,
        "updated_at": ws.updated_at,
        "version": ws.version,
        "tag_names": list(ws.tag_names),
        "tag_bindings": [list(pair) for pair in ws.tag_bindings],
        "remote_state_consumers": list(ws.remote_state_consumers),
        "extra": ws.extra,
        # a module's test workspace is listed apart (`module_tests_of`), never among the workspaces
        "gsi1pk": f"org#{ws.organization}#{'moduletests' if ws.module_id else 'workspaces'}",
        "gsi1sk": ws.name,
    }
    for name in _SIMPLE:
        value = getattr(ws, name)
        if value is not None:
            item[name] = value
    if ws.lock is not None:
        item["lock"] = {k: v for k, v in ws.lock.__dict__.items() if v is not None}
    return item


def _claim(ws: Workspace, name: str) -> dict[str, Any]:
    return {"pk": name_claims(ws.organization), "sk": name, "workspace_id": ws.id}


class WorkspaceStore:
    def __init__(self, table: Table) -> None:
        self._table = table
        self.markers = AutoDestroyMarkers(table)

    # reads -------------------------------------------------------------------------------
    def find(self, workspace_id: str) -> Workspace | None:
        item = self._table.get(*workspace_key(workspace_id)) if looks_like(workspace_id, "ws") else None
        return from_item(item) if item else None

    def id_named(self, org_key: str, name: str) -> str | None:
        """The id of the organization's workspace named `name` (its name claim)."""
        claim = self._table.get(name_claims(org_key), name)
        return str(claim["workspace_id"]) if claim else None

    def names(self, org_key: str) -> list[tuple[str, str]]:
        """(name, id) of every workspace of the organization, by name: one query of the name claims."""
        return [(str(c["sk"]), str(c["workspace_id"])) for c in self._table.query(name_claims(org_key))]

    def load_many(self, workspace_ids: list[str]) -> list[Workspace]:
        return [from_item(item) for item in self._table.batch_get([workspace_key(i) for i in workspace_ids])]

    # writes ------------------------------------------------------------------------------
    def create(self, ws: Workspace) -> bool:
        """The workspace, its name claim and (assessments on) its place in the assessment schedule, in one
        transaction; False when the name is taken."""
        schedule = (
            [Put(shared_keys.schedule_item(ws.id, ws.organization, clock.epoch()))]
            if assessments.enabled(ws.extra)
            else []
        )
        try:
            self._table.transact(
                [Put(_claim(ws, ws.name), if_absent=True), Put(to_item(ws), if_absent=True)] + schedule
            )
        except ConditionFailed:
            return False
        return True

    def create_unlisted(self, ws: Workspace) -> bool:
        """A module's test workspace (`ws.module_id`): no name claim; False when it exists."""
        try:
            self._table.put(to_item(ws), if_absent=True)
        except ConditionFailed:
            return False
        return True

    def module_tests_of(self, org_key: str) -> list[Workspace]:
        """The organization's module test workspaces."""
        return [from_item(i) for i in self._table.query(f"org#{org_key}#moduletests", index="gsi1")]

    def replace(self, ws: Workspace, expected_version: int) -> None:
        """Store `ws` if nobody changed it since `expected_version` (ConditionFailed otherwise)."""
        self._table.put(to_item(ws), if_version=expected_version)

    def replace_if_unchanged(self, ws: Workspace, expected_version: int) -> bool:
        try:
            self.replace(ws, expected_version)
        except ConditionFailed:
            return False
        return True

    @staticmethod
    def put_op(ws: Workspace, expected_version: int) -> WriteOp:
        """A transaction item that stores `ws` only if nobody changed it since `expected_version` (for another
        area's transaction: a run's, a state version's)."""
        return Put(to_item(ws), if_version=expected_version)

    def rename(self, previous_name: str, updated: Workspace, expected_version: int) -> bool:
        """The renamed workspace, its new name claimed and the old one released, in one transaction; False when
        the name is taken or the workspace changed."""
        try:
            self._table.transact(
                [
                    Put(_claim(updated, updated.name), if_absent=True),
                    Delete(name_claims(updated.organization), previous_name),
                    Put(to_item(updated), if_version=expected_version),
                ]
            )
        except ConditionFailed:
            return False
        return True

    def delete(self, ws: Workspace, extra: list[WriteOp] | None = None) -> bool:
        """The workspace item (if unchanged since read) and its name claim, with `extra`; False when it changed."""
        ops: list[WriteOp] = [Delete(*workspace_key(ws.id), if_version=ws.version)]
        if ws.module_id is None:  # a module's test workspace claims no name (another workspace may hold it)
            ops.append(Delete(name_claims(ws.organization), ws.name))
        try:
            self._table.transact(ops + list(extra or []))
        except ConditionFailed:
            return False
        return True

    def schedule_assessments(self, ws: Workspace) -> None:
        """Keep the assessment schedule's sparse index (`domain/assessments.py`) in step with the attribute."""
        key = shared_keys.schedule_key(ws.id)
        if not assessments.enabled(ws.extra):
            self._table.delete(*key)
        elif self._table.get(*key) is None:
            self._table.put(shared_keys.schedule_item(ws.id, ws.organization, clock.epoch()))

    def delete_all_of(self, *, workspace: str) -> None:
        """What a deleted workspace leaves of its own beside its item and name claim: its auto-destroy marker."""
        self.markers.drop(workspace)


class WorkspaceAreaStore:
    """The stores of the workspaces area, built on one table."""

    def __init__(self, table: Table) -> None:
        self.workspaces = WorkspaceStore(table)
        self.variables = VariableStore(table)
        self.varsets = VariableSetStore(table)
        self.run_triggers = RunTriggerStore(table)
        self.agent_pools = AgentPoolStore(table)
        self.tags = TagStore(table)
        self.reserved_tag_keys = ReservedTagKeyStore(table)
        self.ssh_keys = SSHKeyStore(table)
        self.change_requests = ChangeRequestStore(table)

    def delete_all_of(self, *, workspace: str | None = None, organization: str | None = None) -> None:
        """What a workspace (its variables and their key claims, its run triggers both ways, its change requests, its
        auto-destroy marker) or an organization (variable sets with their variables, SSH keys, agent pools with
        their agents and queued jobs, tags) holds of this area. Not the workspaces themselves
        (`WorkspaceService.delete`), nor the variable sets a workspace leaves (`VariableSetService.forget_workspace`:
        a change, not a deletion), nor the agent pools' tokens (the access area's, revoked first by the purge)."""
        if (workspace is None) == (organization is None):
            raise ValueError("delete_all_of takes a workspace or an organization")
        if workspace is not None:
            self.variables.delete_all_of(workspace=workspace)
            self.run_triggers.delete_all_of(workspace=workspace)
            self.change_requests.delete_all_of(workspace=workspace)
            self.workspaces.delete_all_of(workspace=workspace)
        if organization is not None:
            self.varsets.delete_all_of(organization=organization)
            self.ssh_keys.delete_all_of(organization=organization)
            self.agent_pools.delete_all_of(organization=organization)
            self.tags.delete_all_of(organization=organization)
            self.reserved_tag_keys.delete_all_of(organization=organization)
