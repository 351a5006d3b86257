"""Writing a whole state as a workspace's new current version: inline uploads, rollbacks, the http backend.

The state version, its blob and outputs, and the workspace's state fields change in ONE transaction (the
workspace item's version guards it); on a lost race the decision is made again from a fresh read. A refused
write removes the blob and outputs it had put; so does a failed one, once a read shows its version was not
recorded (a write whose answer was lost may have committed).
"""

from __future__ import annotations

from collections.abc import Sequence

from terrace.adapters.blobs import BlobStore
from terrace.domain import clock, state_versions
from terrace.domain import state as st
from terrace.domain.errors import TooLarge
from terrace.domain.ids import new_id
from terrace.domain.principal import Principal, PrincipalKind
from terrace.domain.state import ParsedState
from terrace.domain.state_versions import FINALIZED, StateVersion
from terrace.services.optimistic import optimistic
from terrace.services.state.current import ATTEMPTS, PENDING_KEY, managed_count, with_current
from terrace.services.state.http_backend import LockRule
from terrace.services.state.index import StateIndex
from terrace.services.state.store import StateStore, WriteOp
from terrace.services.state.uploads import StateUploads
from terrace.services.workspaces.workspaces import WorkspaceService


class StateWriter:
    def __init__(
        self,
        store: StateStore,
        blobs: BlobStore,
        workspaces: WorkspaceService,
        index: StateIndex,
        uploads: StateUploads,
    ) -> None:
        self._store, self._blobs, self._workspaces = store, blobs, workspaces
        self._index, self._uploads = index, uploads

    def store(
        self,
        principal: Principal,
        workspace_id: str,
        raw: bytes,
        parsed: ParsedState,
        force: bool,
        run_id: str | None,
        lock_rule: LockRule,
        repeat_creates: bool = False,
        hyok: tuple[bytes, str] | None = None,
        with_writes: Sequence[WriteOp] = (),
    ) -> StateVersion:
        """Make `raw` (already parsed and checked) the workspace's current state; a lower serial or foreign lineage
        is refused unless forced. A state equal to the current one returns the current version, or, with
        `repeat_creates` (the state-versions API, as TFC), becomes a new version of its own. `hyok`: `raw` is a Hold
        Your Own Key envelope; the sanitized copy `parsed` was read from, and the id of its encrypted data key.
        `with_writes` (the data key's records) commit in the same transaction as the version, or not at all."""
        sv_id, md5 = new_id("sv"), st.md5_hex(raw)
        output_ids: tuple[str, ...] | None = None
        written = False  # the blob and outputs, from the first put on: a refused write removes them

        def cleanup() -> None:
            if written:
                self._blobs.delete(state_versions.state_blob_key(workspace_id, sv_id))
                if hyok is not None:
                    self._blobs.delete(state_versions.sanitized_state_blob_key(workspace_id, sv_id))
                self._index.delete_outputs(sv_id)

        def cleanup_unless_recorded() -> None:
            """After a failed write: a transaction whose answer was lost (a timeout after DynamoDB committed, a
            disk error at SQLite's commit) may have made this version current, so its blob and outputs go only
            once a read shows the version absent; when that read fails too they stay (an orphan blob at worst)."""
            if not written:
                return
            try:
                recorded = self._store.recorded(sv_id)
            except Exception:
                return
            if not recorded:
                cleanup()

        def step() -> tuple[StateVersion, bool]:
            nonlocal output_ids, written
            ws = self._workspaces.load(workspace_id)
            lock_rule(ws)
            if state_versions.decide(ws, parsed.serial, parsed.lineage, md5, force) and not repeat_creates:
                return self._store.load(str(ws.current_state_version_id)), False
            if output_ids is None:
                written = True
                self._blobs.put(state_versions.state_blob_key(ws.id, sv_id), raw, "application/json")
                if hyok is not None:
                    self._blobs.put(state_versions.sanitized_state_blob_key(ws.id, sv_id), hyok[0], "application/json")
                output_ids = self._index.write_outputs(sv_id, ws, parsed.outputs)
            sv = StateVersion(
                id=sv_id,
                workspace_id=ws.id,
                organization=ws.organization,
                serial=parsed.serial,
                lineage=parsed.lineage,
                md5=md5,
                status=FINALIZED,
                created_at=clock.now_iso(),
                size=len(raw),
                created_by=principal.subject_id if principal.kind is PrincipalKind.USER else None,
                run_id=run_id,
                force=force,
                terraform_version=parsed.terraform_version,
                format_version=parsed.format_version,
                resources_processed=True,
                summary=parsed.summary,
                output_ids=output_ids,
                hyok_data_key_id=hyok[1] if hyok else None,
                sanitized_md5=st.md5_hex(hyok[0]) if hyok else None,
                sanitized_size=len(hyok[0]) if hyok else None,
            )
            self._store.transact(
                [
                    self._workspaces.write_op(with_current(ws, sv, managed_count(parsed)), ws.version),
                    self._store.save_op(sv),
                    *self._store.discard_pending_ops(ws.extra.get(PENDING_KEY)),
                    *with_writes,
                ]
            )
            return sv, True

        try:
            stored, new = optimistic(
                step, attempts=ATTEMPTS, exhausted="the workspace changed repeatedly while storing state; retry"
            )
        except BaseException:
            cleanup_unless_recorded()
            raise
        if not new:  # the same state as the current one: that version is the answer
            cleanup()
            return stored
        self._uploads.reindex(workspace_id, sv_id, parsed)
        self._uploads.announce_indexed(workspace_id, sv_id)
        return stored


def check_size(size: int, limit: int, http_backend: bool = False) -> None:
    """Inline states (and the http backend's bodies) are bounded by `limit`: TooLarge naming the way around."""
    if size > limit and http_backend:
        raise TooLarge(
            f"the state is {size} bytes; the http backend takes states of up to {limit} bytes (its body passes "
            "through the API's request limit). Larger states: the `cloud` block or the `remote` backend "
            "(Terraform/OpenTofu >= 1.6 upload state straight to storage)"
        )
    if size > limit:
        raise TooLarge(
            f"inline state is {size} bytes; the limit is {limit}. Use a client that uploads state "
            "through hosted-state-upload-url (Terraform/OpenTofu >= 1.6)"
        )
