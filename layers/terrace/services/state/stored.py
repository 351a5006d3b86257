"""A finalized state version's objects, read as they were finalized. Reads never write.

Terraform's state and JSON state uploads go to presigned PUT URLs that cannot be made single-use on S3 (the
clients send no `If-None-Match`), so a replayed URL can write over a finalized object. On S3 the blob bucket
is versioned: finalization records the object versions it read (`blob_version`, `json_version`) and reads take
those, whatever was written over them since (the replay's own landing puts the recorded version back:
`landed.py`). Without versions (the embedded server, whose URLs never replace an object, and the memory
twin), reads check md5 and size against the record first (Conflict, 409).
"""

from __future__ import annotations

from terrace.adapters.blobs import BlobStore
from terrace.domain.state_versions import StateVersion
from terrace.services.blob_records import require_recorded


class StoredState:
    def __init__(self, blobs: BlobStore) -> None:
        self._blobs = blobs

    def state(self, sv: StateVersion) -> StateVersion:
        """`sv`, once its state object is the finalized one (pinned by its recorded version); else Conflict."""
        if sv.blob_version is None:
            require_recorded(self._blobs, sv.blob_key, sv.md5, sv.size or None, f"state of {sv.id}")
        return sv

    def json_state(self, sv: StateVersion) -> StateVersion:
        if sv.json_version is None:
            require_recorded(self._blobs, sv.json_blob_key, sv.json_md5, sv.json_size, f"JSON state of {sv.id}")
        return sv
