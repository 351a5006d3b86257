"""A configuration version's archive and backing data, as a caller changes them (Terraform Enterprise's actions):
archive an uploaded version (not the workspace's current one, nor one a run still needs), soft-delete, restore or
permanently delete its backing data. The retention sweep's own deletion is `ConfigurationVersionService.
expire_backing_data`."""

from __future__ import annotations

from terrace.adapters.blobs import BlobStore
from terrace.domain.configuration_versions import (
    ARCHIVED,
    DATA_DELETED,
    DATA_PRESENT,
    DATA_SOFT_DELETED,
    UPLOADED,
    ConfigurationVersion,
)
from terrace.domain.errors import TransitionNotAllowed
from terrace.domain.principal import Principal
from terrace.services.access.authz import Action
from terrace.services.runs.configuration_versions import ConfigurationVersionService
from terrace.services.workspaces.workspaces import WorkspaceService


class ConfigurationBackingData:
    def __init__(self, versions: ConfigurationVersionService, blobs: BlobStore, workspaces: WorkspaceService) -> None:
        self._versions, self._blobs, self._workspaces = versions, blobs, workspaces

    def archive(self, principal: Principal, cv_id: str) -> ConfigurationVersion:
        """Drop an uploaded version's archive; not the workspace's current one, nor one a run still needs."""
        cv = self._versions.get(principal, cv_id, Action.QUEUE_RUN)
        if cv.status == ARCHIVED:
            return cv
        if cv.status != UPLOADED:
            raise TransitionNotAllowed(f"configuration version {cv.id} is {cv.status}; only uploaded ones are archived")
        current = self._versions.latest_uploaded(self._workspaces.load(cv.workspace_id))
        if current is not None and current.id == cv.id:
            raise TransitionNotAllowed("configuration could not be archived because it is current")
        if any(check(cv) for check in self._versions.in_use):
            raise TransitionNotAllowed("configuration could not be archived because a run still uses it")
        archived = self._versions.save_changes(cv, status=ARCHIVED, backing_data=DATA_DELETED)
        self._blobs.delete(cv.blob_key)
        return archived

    def soft_delete_backing_data(self, principal: Principal, cv_id: str) -> ConfigurationVersion:
        cv = self._versions.get(principal, cv_id, Action.UPDATE_WORKSPACE)
        if cv.status != UPLOADED or cv.backing_data != DATA_PRESENT:
            raise TransitionNotAllowed(f"configuration version {cv.id} has no backing data to delete")
        if any(check(cv) for check in self._versions.in_use):
            raise TransitionNotAllowed("the backing data cannot be deleted while a run uses it")
        return self._versions.save_changes(cv, backing_data=DATA_SOFT_DELETED)

    def restore_backing_data(self, principal: Principal, cv_id: str) -> ConfigurationVersion:
        cv = self._versions.get(principal, cv_id, Action.UPDATE_WORKSPACE)
        if cv.backing_data != DATA_SOFT_DELETED:
            raise TransitionNotAllowed(f"configuration version {cv.id} has no soft-deleted backing data to restore")
        return self._versions.save_changes(cv, backing_data=DATA_PRESENT)

    def permanently_delete_backing_data(self, principal: Principal, cv_id: str) -> ConfigurationVersion:
        cv = self._versions.get(principal, cv_id, Action.UPDATE_WORKSPACE)
        if cv.backing_data != DATA_SOFT_DELETED:
            raise TransitionNotAllowed("only soft-deleted backing data can be deleted permanently")
        deleted = self._versions.save_changes(cv, backing_data=DATA_DELETED)
        self._blobs.delete(cv.blob_key)
        return deleted
