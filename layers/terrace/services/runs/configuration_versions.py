"""Configuration versions: the tarballs runs execute. Uploads go straight to S3 by presigned PUT.

Reads never write: a pending version becomes `uploaded` (or `errored` when too large) when its archive lands
(`landed`, on the `blob.landed` event: the embedded server's PUT, S3's notification through the events worker),
or when a run is created from it (`finalize`: the landing event was lost or is not delivered yet). A caller archives
a version or changes its backing data through `configuration_backing_data.py`; the versions whose archive the
server stores itself (a forge's commit, a generated root module) are made by `configuration_sources.py`."""

from __future__ import annotations

import builtins
import dataclasses
import logging
from collections.abc import Callable, Sequence
from typing import Any

from terrace.adapters.blobs import BlobStore
from terrace.config import Settings
from terrace.domain import clock
from terrace.domain.configuration_versions import (
    DATA_DELETED,
    DATA_PRESENT,
    ERRORED,
    PENDING,
    UPLOADED,
    ConfigurationVersion,
)
from terrace.domain.errors import Conflict, Invalid, NotFound
from terrace.domain.ids import new_id
from terrace.domain.principal import Principal
from terrace.domain.workspace import Workspace
from terrace.services.access.authz import Action, Authorizer
from terrace.services.blob_records import md5_of, require_recorded
from terrace.services.runs.configuration_sources import CURRENT, ServerSourcedVersions
from terrace.services.runs.store import ConditionFailed
from terrace.services.runs.store_configurations import ConfigurationStore
from terrace.services.workspaces.workspaces import WorkspaceService

log = logging.getLogger("terrace.configuration_versions")


def _bool(attrs: dict[str, Any], key: str, default: bool) -> bool:
    value = attrs.get(key, default)
    if not isinstance(value, bool):
        raise Invalid(f"{key} must be true or false", pointer=f"/data/attributes/{key}")
    return value


class ConfigurationVersionService(ServerSourcedVersions):
    def __init__(
        self,
        store: ConfigurationStore,
        blobs: BlobStore,
        workspaces: WorkspaceService,
        settings: Settings,
        *,
        on_uploaded: Sequence[Callable[[ConfigurationVersion], object]],
        on_created: Sequence[Callable[[ConfigurationVersion, Workspace], object]],
        in_use: Sequence[Callable[[ConfigurationVersion], bool]],
        configuration_of_run: Callable[[str], str | None],
    ) -> None:
        self._store = store
        self._blobs = blobs
        self._workspaces = workspaces
        self._settings = settings
        # Called once when a version becomes `uploaded` (e.g. to queue a run when auto-queue-runs).
        self.on_uploaded = tuple(on_uploaded)
        self.on_created = tuple(on_created)  # e.g. start a runner
        # Whether a run that has not ended still needs the version's archive.
        self.in_use = tuple(in_use)
        # a run's configuration version id (the run store), for run task access tokens
        self.configuration_of_run = configuration_of_run

    def create(self, principal: Principal, ws: Workspace, attrs: dict[str, Any]) -> ConfigurationVersion:
        self._workspaces.authorize(principal, Action.QUEUE_RUN, ws)
        cv = ConfigurationVersion(
            id=new_id("cv"),
            workspace_id=ws.id,
            organization=ws.organization,
            created_at=clock.now_iso(),
            speculative=_bool(attrs, "speculative", False),
            provisional=_bool(attrs, "provisional", False),
            auto_queue_runs=_bool(attrs, "auto-queue-runs", True),
            created_by=principal.username,
            may_apply=self._workspaces.can(principal, Action.APPLY_RUN, ws),
        )
        cv.status_timestamps["pending-at"] = cv.created_at
        self._store.create(cv)
        if not cv.provisional:  # the workspace's current-configuration-version (a provisional one is not)
            self._workspaces.mutate(ws.id, lambda cur: dataclasses.replace(cur, extra={**cur.extra, CURRENT: cv.id}))
        for hook in self.on_created:
            try:
                hook(cv, ws)
            except Exception:  # a hook's failure must not fail the creation (the enqueue wakes the scaler too)
                log.exception("on_created hook failed for %s", cv.id)
        return cv

    def load(self, cv_id: str) -> ConfigurationVersion:
        cv = self._store.find(cv_id)
        if cv is None:
            raise NotFound(f"configuration version {cv_id} not found")
        return cv

    def get(self, principal: Principal, cv_id: str, action: Action = Action.READ_RUNS) -> ConfigurationVersion:
        cv = self.load(cv_id)
        try:  # a module's test configuration too, to its module managers (`domain/module_tests.py`)
            self._workspaces.authorize(principal, action, self._workspaces.load(cv.workspace_id))
            Authorizer.require_own_configuration(principal, cv.id, self.configuration_of_run)
        except NotFound as exc:
            raise NotFound(f"configuration version {cv_id} not found") from exc
        return cv

    def list(self, principal: Principal, ws: Workspace) -> list[ConfigurationVersion]:
        self._workspaces.authorize(principal, Action.READ_RUNS, ws)
        return self._store.of_workspace(ws.id, newest_first=True)

    def latest_uploaded(self, ws: Workspace, *, finalize: bool = False) -> ConfigurationVersion | None:
        """The workspace's latest uploaded version; `finalize` (a run's creation, a write): pending ones whose
        archive is there are finalized first."""
        for cv in self._store.of_workspace(ws.id, newest_first=True):
            if finalize:
                cv = self.finalize(cv)
            if cv.status == UPLOADED and not cv.speculative and not cv.provisional:
                return cv
        return None

    def upload_url(self, cv: ConfigurationVersion) -> str | None:
        if cv.status != PENDING:
            return None
        return self._blobs.presign_put(cv.blob_key, self._settings.presign_ttl_s)

    def download_url(self, cv: ConfigurationVersion, ttl_s: int | None = None, *, checked: bool = True) -> str:
        """`checked`: Conflict unless the archive still has the MD5 and size recorded when it arrived (a runner's
        spec is not checked here: it carries the MD5 and the runner checks what it downloaded)."""
        if cv.status != UPLOADED or cv.backing_data != DATA_PRESENT:
            raise NotFound(f"configuration version {cv.id} has no uploaded configuration")
        if checked and cv.sealed:
            require_recorded(self._blobs, cv.blob_key, cv.md5, cv.size, f"configuration of {cv.id}")
        return self._blobs.presign_get(cv.blob_key, ttl_s or self._settings.presign_ttl_s)

    def seal(self, cv: ConfigurationVersion) -> ConfigurationVersion:
        """A run is created from `cv`: its archive as it is now (the last upload) becomes final."""
        for _ in range(3):
            if cv.sealed:
                return cv
            info = self._blobs.head(cv.blob_key)
            if info is None:
                raise Conflict(f"configuration version {cv.id} has no uploaded configuration")
            try:
                return self.save_changes(cv, sealed=True, size=info.size, md5=md5_of(info))
            except Conflict:
                cv = self._store.read(cv.id) or cv
        raise Conflict(f"configuration version {cv.id} changed concurrently; retry")

    def accepts_upload(self, key: str) -> bool:
        """Whether an upload URL's PUT may replace `key` (the embedded blob server asks): a configuration archive
        of a version no run was created from."""
        parts = key.split("/")
        if len(parts) != 3 or parts[0] != "config" or not parts[2].endswith(".tar.gz"):
            return False
        cv = self._store.read(parts[2].removesuffix(".tar.gz"))
        if cv is None:
            return False
        return (
            cv.blob_key == key
            and not cv.sealed
            and cv.status in (PENDING, UPLOADED)
            and cv.backing_data == DATA_PRESENT
        )

    def landed(self, key: str) -> ConfigurationVersion | None:
        """An object landed under `key` (the `blob.landed` event): finalize the version whose archive it is. None
        when it is no version's archive. Only a pending version changes: a repeated landing, or one on a version
        already uploaded (sealed or not: a seal records the archive itself), changes nothing."""
        parts = key.split("/")
        if len(parts) != 3 or parts[0] != "config" or not parts[2].endswith(".tar.gz"):
            return None
        cv_id = parts[2].removesuffix(".tar.gz")
        cv = self._store.find(cv_id)
        if cv is None:
            return None
        return self.finalize(cv) if cv.blob_key == key else None

    def finalize(self, cv: ConfigurationVersion) -> ConfigurationVersion:
        """Move a pending version to uploaded (or errored when too large) once its object exists (a write: the
        landing, or a run's creation; never a read)."""
        if cv.status != PENDING:
            return cv
        info = self._blobs.head(cv.blob_key)
        if info is None:
            return cv
        now = clock.now_iso()
        updated = dataclasses.replace(
            cv,
            size=info.size,
            md5=md5_of(info),
            version=cv.version + 1,
            status_timestamps={**cv.status_timestamps},
        )
        if info.size > self._settings.max_config_bytes:
            updated.status = ERRORED
            updated.error_message = (
                f"configuration is {info.size} bytes; the limit is {self._settings.max_config_bytes} bytes"
            )
            self._blobs.delete(cv.blob_key)
        else:
            updated.status = UPLOADED
        updated.status_timestamps[f"{updated.status}-at"] = now
        try:
            self._store.replace(updated, cv.version)
        except ConditionFailed:
            return self._store.read(cv.id) or cv
        if updated.status == UPLOADED:
            for hook in self.on_uploaded:
                try:
                    hook(updated)
                except Exception:  # a hook's failure must not hide the upload
                    log.exception("on_uploaded hook failed for %s", updated.id)
        return updated

    def created_before(self, workspace_id: str, cutoff_iso: str) -> builtins.list[ConfigurationVersion]:
        """A workspace's configuration versions created before `cutoff_iso`, oldest first (the retention sweep)."""
        return [cv for cv in self._store.of_workspace(workspace_id) if cv.created_at < cutoff_iso]

    def expire_backing_data(self, cv: ConfigurationVersion) -> bool:
        """The retention sweep's delete (no caller to check): not one a run still uses. False when refused."""
        if any(check(cv) for check in self.in_use):
            return False
        try:
            self.save_changes(cv, backing_data=DATA_DELETED)
        except Conflict:
            return False
        self._blobs.delete(cv.blob_key)
        return True

    def save_changes(self, cv: ConfigurationVersion, **changes: Any) -> ConfigurationVersion:
        """`cv` with `changes`, written over the version read (Conflict when it changed meanwhile); no permission
        check: for the area's services that checked."""
        updated = dataclasses.replace(cv, version=cv.version + 1, status_timestamps={**cv.status_timestamps}, **changes)
        if updated.status != cv.status:
            updated.status_timestamps[f"{updated.status}-at"] = clock.now_iso()
        try:
            self._store.replace(updated, cv.version)
        except ConditionFailed as exc:
            raise Conflict(f"configuration version {cv.id} changed concurrently; retry") from exc
        return updated


__all__ = ["CURRENT", "ConfigurationVersionService"]
