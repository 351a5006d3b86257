"""Configuration versions whose archive the server stores itself (mixed into `ConfigurationVersionService`): a
forge's commit (`create_from_forge`, a verified webhook delivery of `services/vcs/`) and an archive the server made
for its caller (`create_generated`, a no-code module's root module). Each is stored and finalized at once."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from terrace.adapters.blobs import BlobStore
from terrace.domain import clock
from terrace.domain.configuration_versions import PENDING, ConfigurationVersion
from terrace.domain.ids import new_id
from terrace.domain.principal import Principal
from terrace.domain.workspace import Workspace
from terrace.services.access.authz import Action
from terrace.services.runs.store import ConditionFailed
from terrace.services.runs.store_configurations import ConfigurationStore
from terrace.services.workspaces.workspaces import WorkspaceService

CURRENT = "current_cv_id"  # in Workspace.extra: the latest non-provisional version


class ServerSourcedVersions:
    _store: ConfigurationStore
    _blobs: BlobStore
    _workspaces: WorkspaceService
    load: Callable[[str], ConfigurationVersion]
    finalize: Callable[[ConfigurationVersion], ConfigurationVersion]

    def create_from_forge(
        self,
        ws: Workspace,
        archive: bytes,
        *,
        source: str,
        speculative: bool,
        ingress: dict[str, Any],
        untrusted: bool,
        auto_queue: bool = True,
        cv_id: str | None = None,
    ) -> ConfigurationVersion:
        """A version of a forge's commit (services/vcs/: a verified webhook delivery, no caller): its archive stored
        and the version finalized at once, which queues its run (auto-queue-runs; the workspace's auto-apply
        applies it, as HCP's VCS runs). `cv_id` (derived from the delivery) makes it idempotent."""
        now = clock.now_iso()
        cv = ConfigurationVersion(
            id=cv_id or new_id("cv"),
            workspace_id=ws.id,
            organization=ws.organization,
            created_at=now,
            speculative=speculative,
            source=source,
            created_by=str(ingress.get("sender-username") or ""),
            ingress=ingress,
            untrusted=untrusted,
            auto_queue_runs=auto_queue,
        )
        cv.status_timestamps["pending-at"] = now
        try:
            self._store.create(cv)
        except ConditionFailed:  # the same work again (`cv_id`): carry on where it stopped, never twice
            cv = self.load(cv.id)
            if cv.status != PENDING:
                return cv
        if not speculative:
            self._workspaces.mutate(ws.id, lambda cur: dataclasses.replace(cur, extra={**cur.extra, CURRENT: cv.id}))
        self._blobs.put(cv.blob_key, archive, "application/gzip")
        return self.finalize(cv)

    def create_generated(
        self, principal: Principal, ws: Workspace, archive: bytes, source: str
    ) -> ConfigurationVersion:
        """A version whose archive the server made for its caller (a no-code module's root module): stored and
        finalized at once, queueing no run (the caller's use case creates it)."""
        self._workspaces.authorize(principal, Action.QUEUE_RUN, ws)
        cv = ConfigurationVersion(id=new_id("cv"), workspace_id=ws.id, organization=ws.organization,
                                  created_at=clock.now_iso(), source=source, auto_queue_runs=False,
                                  created_by=principal.username,
                                  may_apply=self._workspaces.can(principal, Action.APPLY_RUN, ws))  # fmt: skip
        cv.status_timestamps["pending-at"] = cv.created_at
        self._store.create(cv)
        self._workspaces.mutate(ws.id, lambda cur: dataclasses.replace(cur, extra={**cur.extra, CURRENT: cv.id}))
        self._blobs.put(cv.blob_key, archive, "application/gzip")
        return self.finalize(cv)
