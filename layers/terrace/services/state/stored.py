"""A finalized state version's objects, read as they were finalized.

Terraform's state and JSON state uploads go to presigned PUT URLs that cannot be made single-use on S3 (the
clients send no `If-None-Match`), so a replayed URL can write over a finalized object. On S3 the blob bucket
is versioned: finalization records the object versions it read (`blob_version`, `json_version`) and reads take
those. When the current object is no longer the recorded version (a replay wrote over it), the recorded one is
copied back over it and the record names the copy: the replay becomes a noncurrent version, which the
bucket's lifecycle expires, never the finalized state. Without versions (the embedded server, whose URLs never
replace an object, and the memory twin), reads check md5 and size against the record first (Conflict, 409).
"""

from __future__ import annotations

import dataclasses
import logging

from terrace.adapters.blobs import BlobStore
from terrace.adapters.table import ConditionFailed, Table
from terrace.domain.state_versions import StateVersion, sv_to_item
from terrace.services.blob_records import require_recorded
from terrace.services.state.current import find_version

log = logging.getLogger("terrace.state")


class StoredState:
    def __init__(self, table: Table, blobs: BlobStore) -> None:
        self._table, self._blobs = table, blobs

    def state(self, sv: StateVersion) -> StateVersion:
        """`sv` (maybe re-recorded) once its state object is the finalized one; else Conflict."""
        if sv.blob_version is None:
            require_recorded(self._blobs, sv.blob_key, sv.md5, sv.size or None, f"state of {sv.id}")
            return sv
        return self._pinned(sv, sv.blob_key, sv.blob_version, "blob_version")

    def json_state(self, sv: StateVersion) -> StateVersion:
        if sv.json_version is None:
            require_recorded(self._blobs, sv.json_blob_key, sv.json_md5, sv.json_size, f"JSON state of {sv.id}")
            return sv
        return self._pinned(sv, sv.json_blob_key, sv.json_version, "json_version")

    def _pinned(self, sv: StateVersion, key: str, version: str, field: str) -> StateVersion:
        info = self._blobs.head(key)
        if info is not None and info.version == version:
            return sv
        log.warning("state version %s: %s was written over after it was finalized; restoring it", sv.id, key)
        restored = self._blobs.copy(key, key, source_version=version)
        if field == "blob_version":
            updated = dataclasses.replace(sv, version=sv.version + 1, blob_version=restored)
        else:
            updated = dataclasses.replace(sv, version=sv.version + 1, json_version=restored)
        try:
            self._table.put(sv_to_item(updated), if_version=sv.version)
        except ConditionFailed:
            return find_version(self._table, sv.id)  # another reader restored it meanwhile
        return updated
