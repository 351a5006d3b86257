"""The http backend's rules: which workspace a `/state/v1/<org>/<name>` path means and who may write through it."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from terrace.domain import limits
from terrace.domain.errors import Conflict, Invalid, Locked, NotFound
from terrace.domain.principal import Principal
from terrace.domain.workspace import Workspace
from terrace.services.access.organizations import OrganizationService
from terrace.services.state.current import PENDING_KEY
from terrace.services.workspaces.locking import LockService
from terrace.services.workspaces.workspaces import WorkspaceService

LockRule = Callable[[Workspace], None]


def resolve_workspace(
    orgs: OrganizationService,
    workspaces: WorkspaceService,
    principal: Principal,
    organization: str,
    name: str,
    create: bool = False,
) -> Workspace | None:
    """The http backend addresses workspaces by name; the first LOCK or POST creates one (local execution)."""
    orgs.get(principal, organization)  # 404 for an unknown (or invisible) organization
    org_ws = workspaces.find_id(organization, name)
    if org_ws is not None:
        return workspaces.get(principal, org_ws)
    if not create:
        return None
    try:
        return workspaces.create(principal, organization, {"name": name, "execution-mode": "local"})
    except Conflict:
        found = workspaces.find_id(organization, name)
        if found is None:
            raise
        return workspaces.get(principal, found)


def parse_lock_info(raw: bytes) -> dict[str, Any]:
    """A client's LockInfo, checked (JSON object, an `ID` string, at most LOCK_INFO_MAX_BYTES) before
    anything is created or locked."""
    if len(raw) > limits.LOCK_INFO_MAX_BYTES:
        raise Invalid(f"LockInfo is {len(raw)} bytes; the limit is {limits.LOCK_INFO_MAX_BYTES}")
    info = limits.parse_json(raw, "LockInfo")
    if not isinstance(info, dict):
        raise Invalid("LockInfo must be a JSON object")
    lock_id = info.get("ID")
    if not isinstance(lock_id, str) or not lock_id or len(lock_id) > limits.LOCK_ID_MAX:
        raise Invalid(f"LockInfo needs an ID: a string of 1 to {limits.LOCK_ID_MAX} characters")
    return info


def lock_reason(info: dict[str, Any]) -> str:
    reason = info.get("Info") or info.get("Operation") or "locked through the http backend"
    return (reason if isinstance(reason, str) else str(reason))[: limits.LOCK_REASON_MAX]


def http_lock_rule(principal: Principal, lock_id: str | None, organization: str) -> LockRule:
    """Who may POST state through the http backend: `?ID=` must name the lock held (a lock taken through the TFC
    API is named `<organization>/<workspace>`, by the organization's current name, as the backend's lock
    info shows it); without it, only the lock's holder (or anyone while the workspace is unlocked) may write."""

    def rule(ws: Workspace) -> None:
        held = ws.lock
        if held is None:
            if lock_id:
                raise Conflict(f"lock {lock_id!r} is no longer held on workspace {ws.name}")
            return
        if lock_id is not None:
            if lock_id not in (held.lock_id, f"{organization}/{ws.name}") or held.holder != principal.lock_holder:
                raise Conflict(f"lock ID {lock_id!r} does not match the lock held", meta={"lock": held})
        elif held.holder != principal.lock_holder:
            raise Locked(f"workspace {ws.name} is locked by {held.username}", meta={"lock": held})

    return rule


def forget_state(ws: Workspace) -> Workspace:
    """The workspace without any state (http backend DELETE); refused while it is locked."""
    if ws.locked:
        raise Conflict(f"workspace {ws.name} is locked; unlock it before deleting its state")
    extra = {k: v for k, v in ws.extra.items() if k != PENDING_KEY}
    return dataclasses.replace(
        ws,
        current_state_version_id=None,
        state_serial=None,
        state_lineage=None,
        state_md5=None,
        resource_count=0,
        extra=extra,
    )


LOCK_INFO_FIELDS = ("ID", "Operation", "Info", "Who", "Version", "Created", "Path")


class HttpBackendLocks:
    """The http backend's LOCK and UNLOCK on a workspace named by organization and name (the first LOCK creates
    it, in local execution mode)."""

    def __init__(self, orgs: OrganizationService, workspaces: WorkspaceService, locks: LockService) -> None:
        self._orgs = orgs
        self._workspaces = workspaces
        self._locks = locks

    def lock(self, principal: Principal, organization: str, name: str, raw: bytes) -> dict[str, Any]:
        """Lock with the client's LockInfo (checked before the workspace is created); the LockInfo answers."""
        info = parse_lock_info(raw)
        ws = resolve_workspace(self._orgs, self._workspaces, principal, organization, name, create=True)
        assert ws is not None
        self._locks.lock(principal, ws, lock_reason(info), lock_id=info["ID"], info=info)
        return info

    def unlock(self, principal: Principal, organization: str, name: str, raw: bytes) -> None:
        """Unlock the lock the LockInfo's ID names. Terraform's force-unlock sends no body, OpenTofu's
        `force-unlock <id>` a LockInfo with the ID alone: both force."""
        ws = resolve_workspace(self._orgs, self._workspaces, principal, organization, name)
        if ws is None:
            raise NotFound(f"workspace {organization}/{name} not found")
        if not raw.strip():
            self._locks.force_unlock(principal, ws)
            return
        info = parse_lock_info(raw)
        if not any(info.get(key) for key in LOCK_INFO_FIELDS if key != "ID"):
            self._locks.force_unlock(principal, ws, lock_id=info["ID"])
        else:
            self._locks.unlock(principal, ws, lock_id=info["ID"])
