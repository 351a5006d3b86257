"""Workspace locks, shared by the TFC API (lock/unlock/force-unlock), the http backend and runs."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

from terrace.domain import clock, limits
from terrace.domain.errors import Conflict, Locked
from terrace.domain.principal import Principal, PrincipalKind
from terrace.domain.workspace import Workspace, WorkspaceLock
from terrace.services.access.authz import Action
from terrace.services.workspaces.workspaces import WorkspaceService


def describe_holder(lock: WorkspaceLock) -> str:
    kind = {"user": "User", "run": "Run", "organization": "Team", "team": "Team"}.get(lock.holder_kind, "User")
    return f"{kind} {lock.username if kind == 'User' else lock.holder_id}"


class LockService:
    def __init__(
        self,
        workspaces: WorkspaceService,
        *,
        unlock_checks: Sequence[Callable[[Workspace], None]],
        after_release: Sequence[Callable[[Workspace], object]],
    ) -> None:
        self._workspaces = workspaces
        self._unlock_checks = tuple(unlock_checks)  # may raise to refuse an unlock (e.g. a pending state upload)
        self.after_release = tuple(after_release)  # e.g. start the next queued run

    def lock(
        self,
        principal: Principal,
        ws: Workspace,
        reason: str = "",
        *,
        lock_id: str | None = None,
        info: dict[str, Any] | None = None,
    ) -> Workspace:
        """Take the lock. A refusal is decided on the loaded `ws` alone (no further read, no write): pollers of a
        held lock cost one read each and never race its holder's writes. Only a lock that looks free is written,
        conditionally on the version read; when that write loses a race, the latest copy decides."""
        self._workspaces.authorize(principal, Action.LOCK_WORKSPACE, ws)
        reason = limits.text(reason or "", "reason", limits.LOCK_REASON_MAX)
        if ws.lock is not None:
            if self._run_holds(principal, ws):
                return ws
            raise self._refusal(ws, ws.lock)
        new_lock = WorkspaceLock(
            holder=principal.lock_holder,
            username=principal.username,
            reason=reason or "",
            created_at=clock.now_iso(),
            lock_id=lock_id,
            info=info,
        )
        taken = self._workspaces.write_if_still(ws, dataclasses.replace(ws, lock=new_lock))
        if taken is not None:
            return taken

        def take(current: Workspace) -> Workspace:
            if current.lock is not None:
                raise self._refusal(current, current.lock)
            return dataclasses.replace(current, lock=new_lock)

        return self._workspaces.mutate(ws.id, take)

    @staticmethod
    def _refusal(ws: Workspace, held: WorkspaceLock) -> Locked:
        return Locked(f"workspace {ws.name} is already locked by {describe_holder(held)}", meta={"lock": held})

    def unlock(self, principal: Principal, ws: Workspace, *, lock_id: str | None = None) -> Workspace:
        """Release a lock the caller holds. With `lock_id`, the client's lock ID must match too."""
        self._workspaces.authorize(principal, Action.LOCK_WORKSPACE, ws)
        if self._run_holds(principal, ws):
            return ws
        if ws.lock is not None and ws.lock.holder == principal.lock_holder:
            for check in self._unlock_checks:
                check(ws)

        def release(current: Workspace) -> Workspace:
            held = current.lock
            if held is None:
                raise Conflict(f"workspace {current.name} is already unlocked")
            if held.holder != principal.lock_holder:
                raise Locked(f"workspace {current.name} is locked by {describe_holder(held)}", meta={"lock": held})
            if lock_id is not None and held.lock_id is not None and held.lock_id != lock_id:
                raise Locked(
                    f"lock ID {lock_id!r} does not match the lock held ({held.lock_id!r})", meta={"lock": held}
                )
            return dataclasses.replace(current, lock=None)

        return self._released(self._workspaces.mutate(ws.id, release))

    def force_unlock(self, principal: Principal, ws: Workspace, *, lock_id: str | None = None) -> Workspace:
        """Release whoever's lock. With `lock_id`, only that lock (an admin's `force-unlock <id>`)."""
        self._workspaces.authorize(principal, Action.FORCE_UNLOCK, ws)

        def release(current: Workspace) -> Workspace:
            held = current.lock
            if held is None:
                raise Conflict(f"workspace {current.name} is already unlocked")
            if (
                lock_id
                and held.lock_id
                and lock_id != held.lock_id
                and lock_id != f"{self._workspaces.organization_of(current).name}/{current.name}"
            ):
                raise Locked(
                    f"lock ID {lock_id!r} does not match the lock held ({held.lock_id!r})", meta={"lock": held}
                )
            return dataclasses.replace(current, lock=None)

        return self._released(self._workspaces.mutate(ws.id, release))

    def _released(self, ws: Workspace) -> Workspace:
        for hook in self.after_release:
            hook(ws)
        return ws

    def _run_holds(self, principal: Principal, ws: Workspace) -> bool:
        """The head run's own terraform locks and unlocks the workspace its run already holds: both are
        no-ops, the run keeps the lock until it reaches a final state. (Speculative runs never hold it.)"""
        if principal.kind is not PrincipalKind.RUN:
            return False
        return self.holds(principal, ws) and ws.current_run_id == principal.subject_id

    @staticmethod
    def holds(principal: Principal, ws: Workspace) -> bool:
        return ws.lock is not None and ws.lock.holder == principal.lock_holder
