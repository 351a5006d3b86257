"""The events worker's half of a two-step state upload (mixed into `StateUploads`, `uploads.py`): on
`state.uploaded` the finalized state is read, checked against its md5 and declared serial/lineage, parsed, its
outputs written when the client sent none, the resource index rebuilt and the version marked
`resources_processed` (or given an `index_error`); then `state.indexed` tells what follows a workspace's current
state."""

from __future__ import annotations

import dataclasses
import logging
from typing import Any

from terrace.adapters.blobs import BlobDamaged, BlobStore
from terrace.adapters.events import EventPublisher
from terrace.domain import clock
from terrace.domain import state as st
from terrace.domain.errors import Conflict, Invalid, NotFound
from terrace.domain.state import ParsedState
from terrace.domain.state_versions import FINALIZED, StateVersion
from terrace.services.optimistic import optimistic
from terrace.services.state.current import ATTEMPTS, managed_count
from terrace.services.state.index import StateIndex
from terrace.services.state.store import StateStore
from terrace.services.workspaces.workspaces import WorkspaceService

log = logging.getLogger("terrace.state")


def verified_state(blobs: BlobStore, sv: StateVersion) -> bytes:
    """The state of a finalized version, if it still is what was recorded (md5); else Conflict, nothing read on."""
    try:
        raw = blobs.get(sv.blob_key, sv.blob_version)
    except BlobDamaged:  # the store's own checksum caught it first (S3)
        raw = b""
    if st.md5_hex(raw) != sv.md5:
        raise Conflict(f"the stored state of {sv.id} does not match its record (md5 {sv.md5}); it is not served")
    return raw


UPLOADED_EVENT = "state.uploaded"
INDEXED_EVENT = "state.indexed"  # a workspace's current version is indexed (its summary recorded): any write path


class UploadIndexing:
    _store: StateStore
    _blobs: BlobStore
    _workspaces: WorkspaceService
    _index: StateIndex
    _publisher: EventPublisher
    _max_indexed_bytes: int

    def index_uploaded(self, event: dict[str, Any]) -> None:
        """`state.uploaded`: parse the state, write outputs when none were sent, rebuild the resource index."""
        sv_id = str(event.get("state_version_id", ""))
        try:
            sv = self._store.load(sv_id)
        except NotFound:
            log.warning("%s for unknown state version %r", UPLOADED_EVENT, sv_id)
            return
        if sv.status != FINALIZED or sv.resources_processed or sv.index_error:
            return
        if sv.size > self._max_indexed_bytes:
            log.warning("state version %s: %d bytes, not indexed", sv.id, sv.size)
            self._record(sv, None, None, f"the state is {sv.size} bytes: states above {self._max_indexed_bytes}"
                         " bytes are not indexed (TERRACE_MAX_INDEXED_STATE_BYTES)")  # fmt: skip
            return
        if self._blobs.head(sv.blob_key) is None:
            log.warning("%s: the state of %s is gone (purged?)", UPLOADED_EVENT, sv.id)
            return
        if sv.hyok_data_key_id:  # Hold Your Own Key: the server reads the sanitized copy, never the ciphertext
            from terrace.services.state.hyok_state import readable_state

            try:
                raw = readable_state(self._blobs, sv)
            except Conflict as exc:
                self._record(sv, None, None, exc.detail)
                return
        else:
            raw = self._blobs.get(sv.blob_key, sv.blob_version)
        if not sv.hyok_data_key_id and st.md5_hex(raw) != sv.md5:
            log.warning("state version %s: the stored state is not the one finalized (md5 differs)", sv.id)
            self._record(sv, None, None, "the stored state does not match the md5 recorded when it was finalized")
            return
        try:
            parsed = st.parse_state(raw)
        except Invalid as exc:
            log.warning("state version %s is not a valid state: %s", sv.id, exc.detail)
            self._record(sv, None, None, f"the uploaded state could not be parsed: {exc.detail}")
            return
        if parsed.serial != sv.serial or (sv.lineage and parsed.lineage != sv.lineage):
            reason = (
                f"the uploaded state has serial {parsed.serial} and lineage {parsed.lineage!r}; "
                f"serial {sv.serial} and lineage {sv.lineage!r} were declared"
            )
            log.warning("state version %s: %s", sv.id, reason)
            self._record(sv, None, None, reason)
            return
        output_ids = None
        if sv.outputs_pending:
            output_ids = self._index.write_outputs(sv.id, self._workspaces.load(sv.workspace_id), parsed.outputs)
        self.reindex(sv.workspace_id, sv.id, parsed)
        self._record(sv, parsed, output_ids, None)
        self.announce_indexed(sv.workspace_id, sv.id)

    def _record(
        self, sv: StateVersion, parsed: ParsedState | None, output_ids: tuple[str, ...] | None, error: str | None
    ) -> None:
        def step() -> bool:
            ws, current = self._workspaces.load(sv.workspace_id), self._store.load(sv.id)
            if current.resources_processed or current.index_error:
                return False  # a concurrent delivery of the same event got there first
            if parsed is None:
                updated = dataclasses.replace(current, index_error=error, version=current.version + 1)
            else:
                updated = dataclasses.replace(
                    current,
                    version=current.version + 1,
                    lineage=current.lineage or parsed.lineage,
                    terraform_version=parsed.terraform_version,
                    format_version=parsed.format_version,
                    summary=parsed.summary,
                    resources_processed=True,
                    outputs_pending=False,
                    output_ids=current.output_ids if output_ids is None else output_ids,
                )
            ops = [self._store.save_op(updated, current.version)]
            if parsed is not None and ws.current_state_version_id == sv.id:
                counted = dataclasses.replace(
                    ws,
                    resource_count=managed_count(parsed),
                    state_lineage=ws.state_lineage or parsed.lineage,
                    version=ws.version + 1,
                    updated_at=clock.now_iso(),
                )
                ops.append(self._workspaces.write_op(counted, ws.version))
            self._store.transact(ops)
            return True

        recorded = optimistic(step, attempts=ATTEMPTS, exhausted=lambda: False)
        if not recorded and output_ids:  # not recorded: drop the outputs this delivery wrote
            self._store.index.delete_output_ids(output_ids)

    def announce_indexed(self, workspace_id: str, sv_id: str) -> None:
        """`state.indexed`: what follows a workspace's current state (the explorer's summary) may read it now."""
        try:
            self._publisher.publish({"type": INDEXED_EVENT, "state_version_id": sv_id, "workspace_id": workspace_id})
        except Exception:  # the state is stored and indexed either way; only what follows it waits for the next
            log.exception("could not publish %s for %s", INDEXED_EVENT, sv_id)

    def reindex(self, workspace_id: str, sv_id: str, parsed: ParsedState) -> None:
        def instances_of(target: str) -> tuple[st.ResourceInstance, ...]:
            if target == sv_id:
                return parsed.resources
            from terrace.services.state.hyok_state import readable_state

            return st.parse_state(readable_state(self._blobs, self._store.load(target))).resources

        self._index.replace_resources(lambda: self._workspaces.load(workspace_id), instances_of)
