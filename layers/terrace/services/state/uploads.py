"""Two-step state uploads: a cheap finalize when the upload lands, then parsing and indexing in the events worker.

Finalizing runs on a write only, never on a read: when the uploaded object lands (`landed.py`: the embedded blob
server's PUT, S3's event notification) or on the client's unlock (`versions.py`); until then reads show the
version `pending` and the workspace's current version unchanged. It never reads the state body: it heads the
uploaded object, compares its ETag with the md5 declared at creation, trusts the serial/lineage declared then
(checked again against the workspace in the transaction that makes the version current), takes outputs from the
client's `json-state-outputs` when it sent them, and publishes `state.uploaded`. The events worker (the `events`
Lambda on AWS, the events consumer thread locally) parses the state, extracts outputs when none were sent,
rebuilds the resource index and marks the version `resources_processed` (`upload_indexing.py`). A state whose
serial/lineage disagree with the declaration is marked with `index_error`; the current pointer is left alone.
"""

from __future__ import annotations

import base64
import dataclasses
import logging
from collections.abc import Callable, Sequence

from terrace.adapters.blobs import BlobStore
from terrace.adapters.events import EventPublisher
from terrace.domain import clock, state_versions
from terrace.domain import state as st
from terrace.domain.errors import Conflict, Invalid
from terrace.domain.ids import new_id
from terrace.domain.principal import Principal, PrincipalKind
from terrace.domain.state import OutputValue
from terrace.domain.state_versions import DISCARDED, FINALIZED, PENDING, StateVersion
from terrace.domain.workspace import Workspace
from terrace.services.blob_records import md5_of
from terrace.services.optimistic import optimistic
from terrace.services.state.current import ATTEMPTS, PENDING_KEY, with_current
from terrace.services.state.hyok_uploads import landed_copy
from terrace.services.state.index import StateIndex
from terrace.services.state.store import StateStore, WriteOp
from terrace.services.state.upload_indexing import UPLOADED_EVENT, UploadIndexing, verified_state
from terrace.services.workspaces.workspaces import WorkspaceService

log = logging.getLogger("terrace.state")


class StateUploads(UploadIndexing):
    def __init__(
        self,
        store: StateStore,
        blobs: BlobStore,
        workspaces: WorkspaceService,
        index: StateIndex,
        publisher: EventPublisher,
        max_indexed_bytes: int = 48 * 1024 * 1024,
    ) -> None:
        self._store, self._blobs, self._workspaces = store, blobs, workspaces
        self._index, self._publisher = index, publisher
        self._max_indexed_bytes = max_indexed_bytes  # a parsed state takes several times its size in memory

    # the API request path ----------------------------------------------------------------
    def create_pending(
        self,
        principal: Principal,
        ws: Workspace,
        serial: int,
        md5: str,
        lineage: str | None,
        force: bool,
        run_id: str | None,
        json_outputs: str | None,
        lock_rule: Callable[[Workspace], None],
        hyok: tuple[str, Sequence[WriteOp]] | None = None,
    ) -> StateVersion:
        """A pending version the client uploads to with presigned URLs; the workspace remembers it. `hyok`: a Hold
        Your Own Key workspace's, encrypted with that data key (`hyok_uploads.py`), with the writes recording it."""
        sv_id, workspace_id = new_id("sv"), ws.id

        def step() -> StateVersion:
            ws = self._workspaces.load(workspace_id)
            lock_rule(ws)
            if not (serial == ws.state_serial and md5 == ws.state_md5):
                state_versions.decide(
                    ws, serial, lineage, md5, force
                )  # refuses lower serials and foreign lineages early
            sv = StateVersion(
                id=sv_id,
                workspace_id=ws.id,
                organization=ws.organization,
                serial=serial,
                lineage=lineage or "",
                md5=md5,
                status=PENDING,
                created_at=clock.now_iso(),
                created_by=principal.subject_id if principal.kind is PrincipalKind.USER else None,
                run_id=run_id,
                force=force,
                json_outputs=json_outputs,
                hyok_data_key_id=hyok[0] if hyok else None,
            )
            updated = dataclasses.replace(
                ws, extra={**ws.extra, PENDING_KEY: sv_id}, version=ws.version + 1, updated_at=clock.now_iso()
            )
            self._store.transact(
                [
                    self._workspaces.write_op(updated, ws.version),
                    self._store.save_op(sv),
                    *self._store.discard_pending_ops(ws.extra.get(PENDING_KEY)),
                    *(hyok[1] if hyok else ()),
                ]
            )
            return sv

        busy = "the workspace changed repeatedly while creating the state version; retry"
        return optimistic(step, attempts=ATTEMPTS, exhausted=busy)

    def finalize(self, sv: StateVersion) -> StateVersion:
        """Turn an uploaded pending version into the current one (or discard it). Safe to call repeatedly;
        reads only the object's metadata, never its body."""
        if sv.status != PENDING:
            return sv
        if self._workspaces.load(sv.workspace_id).extra.get(PENDING_KEY) != sv.id:
            return self.discard(sv, "superseded by a newer state version")
        info = self._blobs.head(sv.blob_key)
        if info is None:
            return sv
        if info.etag.lower() != sv.md5:
            return self.discard(sv, "the uploaded state does not match the md5 given when the version was created")
        sanitized: tuple[str, int] | None = None
        if sv.hyok_data_key_id:  # the encrypted state and its sanitized copy, both landed and checked
            try:
                sanitized = landed_copy(self._blobs, sv, info.size)
            except Invalid as exc:
                return self.discard(sv, exc.detail)
            if sanitized is None:
                return sv
        outputs: tuple[OutputValue, ...] | None = None
        if sv.json_outputs:
            try:
                outputs = st.parse_outputs(st.load_json(base64.b64decode(sv.json_outputs), "json-state-outputs"))
            except Invalid as exc:
                return self.discard(sv, exc.detail)
        json_info = self._blobs.head(sv.json_blob_key)
        output_ids: tuple[str, ...] | None = None

        def step() -> StateVersion:
            nonlocal output_ids
            ws, current = self._workspaces.load(sv.workspace_id), self._store.load(sv.id)
            if current.status != PENDING:
                return current
            if ws.extra.get(PENDING_KEY) != sv.id:
                return self.discard(current, "superseded by a newer state version")
            try:
                state_versions.decide(ws, sv.serial, sv.lineage or None, sv.md5, sv.force)
            except Conflict as exc:
                return self.discard(current, exc.detail)
            if outputs is not None and output_ids is None:
                output_ids = self._index.write_outputs(sv.id, ws, outputs)
            final = dataclasses.replace(
                current,
                status=FINALIZED,
                size=info.size,
                version=current.version + 1,
                resources_processed=False,
                outputs_pending=outputs is None,
                output_ids=output_ids or (),
                json_outputs=None,
                has_json_state=json_info is not None,
                json_md5=md5_of(json_info) if json_info else None,
                json_size=json_info.size if json_info else None,
                blob_version=info.version,
                json_version=json_info.version if json_info else None,
                sanitized_md5=sanitized[0] if sanitized else None,
                sanitized_size=sanitized[1] if sanitized else None,
            )
            self._store.transact(
                [
                    self._workspaces.write_op(with_current(ws, final, ws.resource_count), ws.version),
                    self._store.save_op(final, current.version),
                ]
            )
            self._announce(final)
            return final

        return optimistic(step, attempts=ATTEMPTS, exhausted=lambda: self._store.load(sv.id))

    def _announce(self, sv: StateVersion) -> None:
        event = {"type": UPLOADED_EVENT, "state_version_id": sv.id, "workspace_id": sv.workspace_id}
        try:
            self._publisher.publish(event)
        except Exception:  # the version is current either way; only its index waits for a re-drive
            log.exception("could not publish %s for %s", UPLOADED_EVENT, sv.id)

    def discard(self, sv: StateVersion, reason: str) -> StateVersion:
        def step() -> StateVersion:
            ws, current = self._workspaces.load(sv.workspace_id), self._store.load(sv.id)
            if current.status != PENDING:
                return current
            gone = dataclasses.replace(
                current, status=DISCARDED, error=reason, json_outputs=None, version=current.version + 1
            )
            ops = [self._store.save_op(gone, current.version)]
            if ws.extra.get(PENDING_KEY) == sv.id:
                extra = {k: v for k, v in ws.extra.items() if k != PENDING_KEY}
                cleared = dataclasses.replace(ws, extra=extra, version=ws.version + 1, updated_at=clock.now_iso())
                ops.append(self._workspaces.write_op(cleared, ws.version))
            self._store.transact(ops)
            return gone

        return optimistic(step, attempts=ATTEMPTS, exhausted=lambda: self._store.load(sv.id))


__all__ = ["StateUploads", "verified_state"]
