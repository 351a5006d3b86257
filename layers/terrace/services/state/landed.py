"""An uploaded state object landed: the write that finalizes a two-step upload (`uploads.py`).

The `blob.landed` event (`services/events.py`) comes from the embedded blob server right after a PUT (in the
request, so a client sees `finalized` as soon as its PUT returns) and from the blob bucket's S3 event
notifications through the events worker (AWS and moto). State and JSON state land in either order (go-tfe PUTs
them concurrently): the state's landing finalizes, recording the JSON state if it is there; a JSON state that
lands after that is recorded on the finalized version then, once. A later object under a finalized version's key
is a replayed upload URL (S3 cannot refuse it): its landing copies the recorded object version back over it and
records the copy, so the replay becomes a noncurrent version, which the bucket's lifecycle expires, never the
finalized state (reads pin the recorded version meanwhile and never write: `stored.py`). Landings of other
objects, and repeated landings, change nothing. A Hold Your Own Key version's sanitized copy lands like its state
(`hyok_uploads.py`: the version is finalized once both are there).
"""

from __future__ import annotations

import dataclasses
import logging

from terrace.adapters.blobs import BlobStore
from terrace.domain.ids import looks_like
from terrace.domain.state_versions import FINALIZED, StateVersion
from terrace.services.blob_records import md5_of
from terrace.services.optimistic import optimistic
from terrace.services.state.current import ATTEMPTS
from terrace.services.state.store import StateStore
from terrace.services.state.uploads import StateUploads

log = logging.getLogger("terrace.state")


def version_of(key: str) -> str | None:
    """The state version a blob key belongs to (`state/<workspace>/<sv>.tfstate|.json`), if it is one."""
    parts = key.split("/")
    if len(parts) != 3 or parts[0] != "state":
        return None
    name = parts[2].split(".", 1)[0]
    return name if looks_like(name, "sv") else None


class LandedState:
    def __init__(self, store: StateStore, blobs: BlobStore, uploads: StateUploads) -> None:
        self._store, self._blobs, self._uploads = store, blobs, uploads

    def landed(self, key: str) -> StateVersion | None:
        """Finalize the version `key` belongs to (or record its JSON state); None when it is no state's."""
        sv_id = version_of(key)
        sv = self._store.find(sv_id) if sv_id else None
        if sv is None:
            return None
        if key not in (sv.blob_key, sv.json_blob_key, sv.sanitized_blob_key if sv.hyok_data_key_id else None):
            return None
        was_finalized = sv.status == FINALIZED
        sv = self._uploads.finalize(sv)
        if key == sv.sanitized_blob_key:  # a Hold Your Own Key copy: reads check it against its recorded md5
            return sv
        if key == sv.json_blob_key and sv.status == FINALIZED and not sv.has_json_state:
            return self._record_json(sv)
        if was_finalized:
            return self._restore(sv, key)
        return sv

    def _record_json(self, sv: StateVersion) -> StateVersion:
        info = self._blobs.head(sv.json_blob_key)
        if info is None:
            return sv

        def step() -> StateVersion:
            current = self._store.load(sv.id)
            if current.has_json_state or current.status != FINALIZED:
                return current
            recorded = dataclasses.replace(
                current,
                version=current.version + 1,
                has_json_state=True,
                json_md5=md5_of(info),
                json_size=info.size,
                json_version=info.version,
            )
            self._store.save(recorded, current.version)
            return recorded

        return optimistic(step, attempts=ATTEMPTS, exhausted=lambda: self._store.load(sv.id))

    def _restore(self, sv: StateVersion, key: str) -> StateVersion:
        """A landing on an object of a finalized version: when the object is no longer the recorded version (a
        replayed upload URL wrote over it), copy the recorded version back over it and record the copy. A copy
        lands too, and then is the recorded version: nothing more happens."""
        field = "blob_version" if key == sv.blob_key else "json_version"
        copies: set[str] = set()

        def step() -> StateVersion:
            current = self._store.load(sv.id)
            recorded = getattr(current, field)
            info = self._blobs.head(key)
            if recorded is None or info is None or info.version == recorded:
                return current  # no versions (reads check md5 and size), deleted, or as finalized
            restored: str | None
            if info.version in copies:  # our copy of the recorded version is current: record it
                restored = info.version
            else:
                log.warning("state version %s: %s was written over after it was finalized; restoring it", sv.id, key)
                restored = self._blobs.copy(key, key, source_version=recorded)
                copies.add(restored or "")
            if field == "blob_version":
                updated = dataclasses.replace(current, version=current.version + 1, blob_version=restored)
            else:
                updated = dataclasses.replace(current, version=current.version + 1, json_version=restored)
            self._store.save(updated, current.version)
            return updated

        return optimistic(step, attempts=ATTEMPTS, exhausted=lambda: self._store.load(sv.id))
