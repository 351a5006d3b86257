"""State versions: create (inline or two-step upload), finalize, read, roll back, and the http backend's writes.

A new current version and the workspace's state fields change in ONE transaction (the workspace item's
version guards it); on a lost race the decision is made again from a fresh read. Raw state lives in the
blob store; its metadata, outputs and the resource index live in the table.
"""

from __future__ import annotations

import base64
import dataclasses
from collections.abc import Callable, Iterator
from typing import Any

from terrace.adapters.blobs import BlobStore
from terrace.adapters.table import ConditionFailed, Put, Table, WriteOp
from terrace.config import Settings
from terrace.domain import clock
from terrace.domain import state as st
from terrace.domain.errors import Conflict, Forbidden, Invalid, Locked, NotFound, TooLarge
from terrace.domain.ids import looks_like, new_id
from terrace.domain.principal import Principal, PrincipalKind
from terrace.domain.state import DISCARDED, FINALIZED, PENDING, ParsedState, StateVersion
from terrace.domain.workspace import Workspace
from terrace.services.authz import Action
from terrace.services.locking import LockService
from terrace.services.organizations import OrganizationService
from terrace.services.state_index import IndexedResource, StateIndex, StoredOutput
from terrace.services.workspaces import WorkspaceService

PENDING_KEY = "pending_state_version_id"  # in Workspace.extra while a two-step upload is outstanding
ATTEMPTS = 8
LockRule = Callable[[Workspace], None]


def _with_current(ws: Workspace, sv: StateVersion, resource_count: int) -> Workspace:
    extra = {k: v for k, v in ws.extra.items() if k != PENDING_KEY}
    return dataclasses.replace(
        ws,
        current_state_version_id=sv.id,
        state_serial=sv.serial,
        state_lineage=sv.lineage,
        state_md5=sv.md5,
        resource_count=resource_count,
        extra=extra,
        version=ws.version + 1,
        updated_at=clock.now_iso(),
    )


class StateVersionService:
    def __init__(
        self,
        table: Table,
        blobs: BlobStore,
        settings: Settings,
        workspaces: WorkspaceService,
        index: StateIndex,
        organizations: OrganizationService,
    ) -> None:
        self._table, self._blobs, self._settings = table, blobs, settings
        self._workspaces, self._index, self._orgs = workspaces, index, organizations

    # creating ----------------------------------------------------------------------------
    def create(
        self, principal: Principal, workspace_id: str, attrs: dict[str, Any], run_id: str | None = None
    ) -> StateVersion:
        ws = self._workspaces.get(principal, workspace_id, Action.WRITE_STATE)
        self._require_lock(principal)(ws)
        serial, md5 = st.require_serial(attrs), st.require_md5(attrs)
        lineage = attrs.get("lineage") or None
        if lineage is not None and not isinstance(lineage, str):
            raise Invalid("lineage must be a string", pointer="/data/attributes/lineage")
        force = bool(attrs.get("force", False))
        if attrs.get("state") in (None, ""):
            return self._create_pending(principal, ws, serial, md5, lineage, force, run_id, attrs)
        raw = st.decode_base64(attrs["state"], "/data/attributes/state")
        self._check_size(len(raw))
        if st.md5_hex(raw) != md5:
            raise Invalid("md5 does not match the MD5 of the decoded state", pointer="/data/attributes/md5")
        parsed = st.parse_state(raw)
        if parsed.serial != serial or (lineage and parsed.lineage != lineage):
            raise Invalid("serial/lineage attributes do not match the state file", pointer="/data/attributes/serial")
        return self._store(principal, ws.id, raw, parsed, force, run_id, self._require_lock(principal))

    def _check_size(self, size: int) -> None:
        limit = self._settings.max_inline_state_bytes
        if size > limit:
            raise TooLarge(
                f"inline state is {size} bytes; the limit is {limit}. Use a client that uploads state "
                "through hosted-state-upload-url (Terraform/OpenTofu >= 1.6) or the http backend"
            )

    @staticmethod
    def _require_lock(principal: Principal) -> LockRule:
        def rule(ws: Workspace) -> None:
            if not LockService.holds(principal, ws):
                raise Conflict(f"workspace {ws.name} must be locked by you before writing state")

        return rule

    def _store(
        self,
        principal: Principal,
        workspace_id: str,
        raw: bytes,
        parsed: ParsedState,
        force: bool,
        run_id: str | None,
        lock_rule: LockRule,
    ) -> StateVersion:
        sv_id, md5 = new_id("sv"), st.md5_hex(raw)
        output_ids: tuple[str, ...] | None = None

        def cleanup() -> None:
            if output_ids is not None:
                self._blobs.delete(st.state_blob_key(workspace_id, sv_id))
                self._index.delete_outputs(sv_id)

        stored: StateVersion | None = None
        try:
            for _ in range(ATTEMPTS):
                ws = self._workspaces.load(workspace_id)
                lock_rule(ws)
                if st.decide(ws, parsed.serial, parsed.lineage, md5, force):
                    cleanup()
                    return self._find(str(ws.current_state_version_id))
                if output_ids is None:
                    self._blobs.put(st.state_blob_key(ws.id, sv_id), raw, "application/json")
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
                )
                ops: list[WriteOp] = [
                    self._workspaces.write_op(_with_current(ws, sv, _managed(parsed)), ws.version),
                    Put(st.sv_to_item(sv), if_absent=True),
                    *self._discard_pending_ops(ws),
                ]
                try:
                    self._table.transact(ops)
                except ConditionFailed:
                    continue
                stored = sv
                break
        except BaseException:
            cleanup()
            raise
        if stored is None:
            cleanup()
            raise Conflict("the workspace changed repeatedly while storing state; retry")
        self._reindex(workspace_id, sv_id, parsed)
        return stored

    def _discard_pending_ops(self, ws: Workspace) -> list[WriteOp]:
        pending_id = ws.extra.get(PENDING_KEY)
        item = self._table.get(pending_id, "sv") if pending_id else None
        if item is None or item["status"] != PENDING:
            return []
        old = st.sv_from_item(item)
        gone = dataclasses.replace(
            old, status=DISCARDED, error="superseded by a newer state version", version=old.version + 1
        )
        return [Put(st.sv_to_item(gone), if_version=old.version)]

    def _create_pending(
        self,
        principal: Principal,
        ws: Workspace,
        serial: int,
        md5: str,
        lineage: str | None,
        force: bool,
        run_id: str | None,
        attrs: dict[str, Any],
    ) -> StateVersion:
        json_outputs = attrs.get("json-state-outputs") or None
        if json_outputs is not None:
            st.parse_outputs(
                st.load_json(
                    st.decode_base64(json_outputs, "/data/attributes/json-state-outputs"), "json-state-outputs"
                )
            )
        sv_id = new_id("sv")
        for _ in range(ATTEMPTS):
            ws = self._workspaces.load(ws.id)
            self._require_lock(principal)(ws)
            if not (serial == ws.state_serial and md5 == ws.state_md5):
                st.decide(ws, serial, lineage, md5, force)  # refuses lower serials and foreign lineages early
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
            try:
                self._table.transact(
                    [
                        self._workspaces.write_op(updated, ws.version),
                        Put(st.sv_to_item(sv), if_absent=True),
                        *self._discard_pending_ops(ws),
                    ]
                )
                return sv
            except ConditionFailed:
                continue
        raise Conflict("the workspace changed repeatedly while creating the state version; retry")

    # finalizing two-step uploads ---------------------------------------------------------
    def finalize(self, sv: StateVersion) -> StateVersion:
        """Turn an uploaded pending version into the current one (or discard it). Safe to call repeatedly."""
        if sv.status != PENDING:
            return sv
        if self._workspaces.load(sv.workspace_id).extra.get(PENDING_KEY) != sv.id:
            return self._discard(sv, "superseded by a newer state version")
        info = self._blobs.head(sv.blob_key)
        if info is None:
            return sv
        if info.etag.lower() != sv.md5:
            return self._discard(sv, "the uploaded state does not match the md5 given when the version was created")
        raw = self._blobs.get(sv.blob_key)
        try:
            parsed = st.parse_state(raw)
            if parsed.serial != sv.serial or (sv.lineage and parsed.lineage != sv.lineage):
                raise Invalid("the uploaded state's serial/lineage differ from the ones declared")
            outputs = parsed.outputs
            if sv.json_outputs:
                outputs = st.parse_outputs(st.load_json(base64.b64decode(sv.json_outputs), "json-state-outputs"))
        except Invalid as exc:
            return self._discard(sv, exc.detail)
        output_ids: tuple[str, ...] | None = None
        for _ in range(ATTEMPTS):
            ws, current = self._workspaces.load(sv.workspace_id), self._find(sv.id)
            if current.status != PENDING:
                return current
            if ws.extra.get(PENDING_KEY) != sv.id:
                return self._discard(current, "superseded by a newer state version")
            try:
                st.decide(ws, parsed.serial, parsed.lineage, sv.md5, sv.force)
            except Conflict as exc:
                return self._discard(current, exc.detail)
            if output_ids is None:
                output_ids = self._index.write_outputs(sv.id, ws, outputs)
            final = dataclasses.replace(
                current,
                status=FINALIZED,
                lineage=parsed.lineage,
                size=len(raw),
                version=current.version + 1,
                terraform_version=parsed.terraform_version,
                format_version=parsed.format_version,
                resources_processed=True,
                summary=parsed.summary,
                output_ids=output_ids,
                json_outputs=None,
                has_json_state=self._blobs.head(sv.json_blob_key) is not None,
            )
            try:
                self._table.transact(
                    [
                        self._workspaces.write_op(_with_current(ws, final, _managed(parsed)), ws.version),
                        Put(st.sv_to_item(final), if_version=current.version),
                    ]
                )
            except ConditionFailed:
                continue
            self._reindex(ws.id, sv.id, parsed)
            return final
        return self._find(sv.id)

    def finalize_uploaded(self, blob_key: str) -> StateVersion | None:
        """The events path: an object landed in the blob store; finalize the version it belongs to."""
        name = blob_key.rsplit("/", 1)[-1].split(".", 1)[0]
        item = self._table.get(name, "sv") if blob_key.startswith("state/") and looks_like(name, "sv") else None
        return self.finalize(st.sv_from_item(item)) if item else None

    def _discard(self, sv: StateVersion, reason: str) -> StateVersion:
        for _ in range(ATTEMPTS):
            ws, current = self._workspaces.load(sv.workspace_id), self._find(sv.id)
            if current.status != PENDING:
                return current
            gone = dataclasses.replace(
                current, status=DISCARDED, error=reason, json_outputs=None, version=current.version + 1
            )
            ops: list[WriteOp] = [Put(st.sv_to_item(gone), if_version=current.version)]
            if ws.extra.get(PENDING_KEY) == sv.id:
                extra = {k: v for k, v in ws.extra.items() if k != PENDING_KEY}
                cleared = dataclasses.replace(ws, extra=extra, version=ws.version + 1, updated_at=clock.now_iso())
                ops.append(self._workspaces.write_op(cleared, ws.version))
            try:
                self._table.transact(ops)
                return gone
            except ConditionFailed:
                continue
        return self._find(sv.id)

    def ensure_not_pending(self, ws: Workspace) -> None:
        """LockService unlock check: a workspace with an outstanding upload stays locked."""
        pending_id = ws.extra.get(PENDING_KEY)
        if pending_id and self.finalize(self._find(pending_id)).status == PENDING:
            raise Conflict(
                f"cannot unlock workspace {ws.name}: latest state version is still pending "
                f"({pending_id}); upload it or force-unlock"
            )

    def _reindex(self, workspace_id: str, sv_id: str, parsed: ParsedState) -> None:
        def instances_of(target: str) -> tuple[st.ResourceInstance, ...]:
            if target == sv_id:
                return parsed.resources
            return st.parse_state(self._blobs.get(self._find(target).blob_key)).resources

        self._index.replace_resources(lambda: self._workspaces.load(workspace_id), instances_of)

    # reading -----------------------------------------------------------------------------
    def _find(self, sv_id: str) -> StateVersion:
        item = self._table.get(sv_id, "sv") if looks_like(sv_id, "sv") else None
        if item is None:
            raise NotFound(f"state version {sv_id} not found")
        return st.sv_from_item(item)

    def get(self, principal: Principal, sv_id: str, action: Action = Action.READ_STATE) -> StateVersion:
        sv = self._find(sv_id)
        try:
            self._workspaces.get(principal, sv.workspace_id, action)
        except NotFound as exc:
            raise NotFound(f"state version {sv_id} not found") from exc
        return self.finalize(sv)

    def current(self, principal: Principal, workspace_id: str, action: Action = Action.READ_STATE) -> StateVersion:
        ws = self._workspaces.get(principal, workspace_id, action)
        if ws.extra.get(PENDING_KEY):
            self.finalize(self._find(ws.extra[PENDING_KEY]))
            ws = self._workspaces.load(ws.id)
        if not ws.current_state_version_id:
            raise NotFound(f"workspace {ws.name} has no current state version")
        return self._find(ws.current_state_version_id)

    def current_or_none(self, ws: Workspace) -> StateVersion | None:
        return self._find(ws.current_state_version_id) if ws.current_state_version_id else None

    def list_for(self, principal: Principal, ws: Workspace, status: str | None = None) -> list[StateVersion]:
        self._workspaces.authorize(principal, Action.READ_STATE, ws)
        items = self._table.query(f"{ws.id}#state-versions", index="gsi1", reverse=True)
        found = [self.finalize(st.sv_from_item(item)) for item in items]
        return [sv for sv in found if not status or sv.status == status]

    def upload_urls(self, sv: StateVersion) -> tuple[str | None, str | None]:
        if sv.status != PENDING:
            return None, None
        ttl = self._settings.presign_ttl_s
        return self._blobs.presign_put(sv.blob_key, ttl), self._blobs.presign_put(sv.json_blob_key, ttl)

    def download_url(self, principal: Principal, sv_id: str, json_state: bool = False) -> str:
        sv = self.get(principal, sv_id)
        if sv.status != FINALIZED or (json_state and not sv.has_json_state):
            raise NotFound(f"state version {sv_id} has no {'JSON ' if json_state else ''}state to download")
        return self._blobs.presign_get(sv.json_blob_key if json_state else sv.blob_key, self._settings.presign_ttl_s)

    def iter_state(self, sv: StateVersion) -> Iterator[bytes]:
        return self._blobs.iter_chunks(sv.blob_key)

    def _can(self, principal: Principal, action: Action, ws: Workspace) -> bool:
        try:
            self._workspaces.authorize(principal, action, ws)
        except (Forbidden, NotFound):
            return False
        return True

    # outputs and resources ---------------------------------------------------------------
    def outputs(self, principal: Principal, sv_id: str) -> list[StoredOutput]:
        sv = self.get(principal, sv_id, Action.READ_STATE_OUTPUTS)
        return self._index.outputs_of(sv.id) if sv.status == FINALIZED else []

    def current_outputs(self, principal: Principal, workspace_id: str) -> list[StoredOutput]:
        return self._index.outputs_of(self.current(principal, workspace_id, Action.READ_STATE_OUTPUTS).id)

    def output(self, principal: Principal, wos_id: str) -> tuple[StoredOutput, bool]:
        """An output and whether the caller may see its value even when sensitive (READ_STATE)."""
        out = self._index.output(wos_id)
        try:
            ws = self._workspaces.get(principal, out.workspace_id, Action.READ_STATE_OUTPUTS)
        except NotFound as exc:
            raise NotFound(f"state version output {wos_id} not found") from exc
        return out, self._can(principal, Action.READ_STATE, ws)

    def resources(self, principal: Principal, workspace_id: str) -> list[IndexedResource]:
        return self._index.resources(self._workspaces.get(principal, workspace_id, Action.READ_STATE))

    def search_resources(
        self, principal: Principal, organization: str, text: str = "", type_: str = "", provider: str = ""
    ) -> list[IndexedResource]:
        readable = [
            ws for ws in self._workspaces.list(principal, organization) if self._can(principal, Action.READ_STATE, ws)
        ]
        return self._index.search(organization, readable, text, type_, provider)

    # rollback and the http backend -------------------------------------------------------
    def rollback(self, principal: Principal, workspace_id: str, target_id: str) -> StateVersion:
        ws = self._workspaces.get(principal, workspace_id, Action.WRITE_STATE)
        self._require_lock(principal)(ws)
        target = self._find(target_id)
        if target.workspace_id != ws.id:
            raise NotFound(f"state version {target_id} not found in workspace {ws.name}")
        if target.status != FINALIZED:
            raise Conflict(f"state version {target_id} is {target.status}; only finalized versions can be restored")
        raw = st.with_serial(self._blobs.get(target.blob_key), (ws.state_serial or 0) + 1)
        return self._store(principal, ws.id, raw, st.parse_state(raw), True, None, self._require_lock(principal))

    def resolve_workspace(
        self, principal: Principal, organization: str, name: str, create: bool = False
    ) -> Workspace | None:
        """The http backend addresses workspaces by name; the first LOCK or POST creates one (local execution)."""
        self._orgs.get(principal, organization)  # 404 for an unknown (or invisible) organization
        org_ws = self._workspaces.find_id(organization, name)
        if org_ws is not None:
            return self._workspaces.get(principal, org_ws)
        if not create:
            return None
        try:
            return self._workspaces.create(principal, organization, {"name": name, "execution-mode": "local"})
        except Conflict:
            found = self._workspaces.find_id(organization, name)
            if found is None:
                raise
            return self._workspaces.get(principal, found)

    @staticmethod
    def http_lock_rule(principal: Principal, lock_id: str | None) -> LockRule:
        """Who may POST state through the http backend: `?ID=` must name the lock held; without it, only
        the lock's holder (or anyone while the workspace is unlocked) may write."""

        def rule(ws: Workspace) -> None:
            held = ws.lock
            if held is None:
                if lock_id:
                    raise Conflict(f"lock {lock_id!r} is no longer held on workspace {ws.name}")
                return
            if lock_id is not None:
                if (
                    lock_id not in (held.lock_id, f"{ws.organization}/{ws.name}")
                    or held.holder != principal.lock_holder
                ):
                    raise Conflict(f"lock ID {lock_id!r} does not match the lock held", meta={"lock": held})
            elif held.holder != principal.lock_holder:
                raise Locked(f"workspace {ws.name} is locked by {held.username}", meta={"lock": held})

        return rule

    def write_raw(self, principal: Principal, ws: Workspace, raw: bytes, lock_rule: LockRule) -> StateVersion:
        """The http backend's POST: the body is the raw state; the caller's lock rule decides who may write."""
        self._workspaces.authorize(principal, Action.WRITE_STATE, ws)
        self._check_size(len(raw))
        return self._store(principal, ws.id, raw, st.parse_state(raw), False, None, lock_rule)

    def delete_history(self, principal: Principal, ws: Workspace) -> None:
        """Forget every state version of a workspace (http backend DELETE). Refused while it is locked."""
        self._workspaces.authorize(principal, Action.DELETE_WORKSPACE, ws)

        def clear(current: Workspace) -> Workspace:
            if current.locked:
                raise Conflict(f"workspace {current.name} is locked; unlock it before deleting its state")
            extra = {k: v for k, v in current.extra.items() if k != PENDING_KEY}
            return dataclasses.replace(
                current,
                current_state_version_id=None,
                state_serial=None,
                state_lineage=None,
                state_md5=None,
                resource_count=0,
                extra=extra,
            )

        self._workspaces.mutate(ws.id, clear)
        self.purge(ws.id)

    def purge(self, workspace_id: str) -> None:
        """Delete the stored versions, outputs, blobs and index of a workspace (after deletion or a reset)."""
        for item in self._table.query(f"{workspace_id}#state-versions", index="gsi1"):
            sv = st.sv_from_item(item)
            self._index.delete_outputs(sv.id)
            self._blobs.delete(sv.blob_key)
            self._blobs.delete(sv.json_blob_key)
            self._table.delete(sv.id, "sv")
        self._index.delete_resources(workspace_id)


def _managed(parsed: ParsedState) -> int:
    return sum(1 for r in parsed.resources if r.mode == "managed")
