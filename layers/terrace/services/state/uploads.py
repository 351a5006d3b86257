"""Two-step state uploads: a cheap finalize when the upload lands, then parsing and indexing in the events worker.

Finalizing runs on a write only, never on a read: when the uploaded object lands (`landed.py`: the embedded blob
server's PUT, S3's event notification) or on the client's unlock (`versions.py`); until then reads show the
version `pending` and the workspace's current version unchanged. It never reads the state body: it heads the
uploaded object, compares its ETag with the md5 declared at creation, trusts the serial/lineage declared then
(checked again against the workspace in the transaction that makes the version current), takes outputs from the
client's `json-state-outputs` when it sent them, and publishes `state.uploaded`. The events worker (the `events`
Lambda on AWS, the events consumer thread locally) parses the state, extracts outputs when none were sent,
rebuilds the resource index and marks the version `resources_processed`. A state whose serial/lineage
disagree with the declaration is marked with `index_error`; the current pointer is left alone.
"""

from __future__ import annotations

import base64
import dataclasses
import logging
from collections.abc import Callable
from typing import Any

from terrace.adapters.blobs import BlobDamaged, BlobStore
from terrace.adapters.events import EventPublisher
from terrace.domain import clock, state_versions
from terrace.domain import state as st
from terrace.domain.errors import Conflict, Invalid, NotFound
from terrace.domain.ids import new_id
from terrace.domain.principal import Principal, PrincipalKind
from terrace.domain.state import OutputValue, ParsedState
from terrace.domain.state_versions import DISCARDED, FINALIZED, PENDING, StateVersion
from terrace.domain.workspace import Workspace
from terrace.services.blob_records import md5_of
from terrace.services.optimistic import optimistic
from terrace.services.state.current import ATTEMPTS, PENDING_KEY, managed_count, with_current
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


class StateUploads:
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
    ) -> StateVersion:
        """A pending version the client uploads to with presigned URLs; the workspace remembers it."""
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
            )
            updated = dataclasses.replace(
                ws, extra={**ws.extra, PENDING_KEY: sv_id}, version=ws.version + 1, updated_at=clock.now_iso()
            )
            self._store.transact(
                [
                    self._workspaces.write_op(updated, ws.version),
                    self._store.save_op(sv),
                    *self._store.discard_pending_ops(ws.extra.get(PENDING_KEY)),
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

    # the events worker -------------------------------------------------------------------
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
        raw = self._blobs.get(sv.blob_key, sv.blob_version)
        if st.md5_hex(raw) != sv.md5:
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
