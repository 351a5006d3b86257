"""State versions: create (inline or two-step upload) and read (rollbacks and the http backend's writes:
`rewrites.py`).

A new current version and the workspace's state fields change in ONE transaction (`writes.py`: the
workspace item's version guards it). Raw state lives in the blob store; its metadata, outputs and the
resource index live in the table, through the area's store (`store.py`, `store_index.py`). Inline states are
parsed and indexed in the request (they are small); two-step uploads are finalized when the upload lands
(`landed.py`) or on unlock, never on a read, and indexed by `uploads.py`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

from terrace.adapters.blobs import BlobStore
from terrace.adapters.events import EventPublisher
from terrace.config import Settings
from terrace.domain import state as st
from terrace.domain import state_versions
from terrace.domain.errors import Conflict, Forbidden, Invalid, NotFound
from terrace.domain.principal import Principal, PrincipalKind
from terrace.domain.state_index import IndexedResource, StoredOutput
from terrace.domain.state_versions import FINALIZED, PENDING, StateVersion
from terrace.domain.workspace import Workspace
from terrace.services.access.authz import Action
from terrace.services.access.organizations import OrganizationService
from terrace.services.state import hyok_state, hyok_uploads
from terrace.services.state.current import PENDING_KEY
from terrace.services.state.http_backend import LockRule
from terrace.services.state.hyok_state import HyokKeys
from terrace.services.state.index import StateIndex
from terrace.services.state.landed import LandedState
from terrace.services.state.rewrites import StateRewrites
from terrace.services.state.store import StateStore
from terrace.services.state.stored import StoredState
from terrace.services.state.uploads import StateUploads, verified_state
from terrace.services.state.writes import StateWriter, check_size
from terrace.services.workspaces.locking import LockService
from terrace.services.workspaces.workspaces import WorkspaceService


class StateVersionService(StateRewrites):
    def __init__(
        self,
        store: StateStore,
        blobs: BlobStore,
        settings: Settings,
        workspaces: WorkspaceService,
        index: StateIndex,
        organizations: OrganizationService,
        publisher: EventPublisher,
        hyok_keys: HyokKeys | None = None,
    ) -> None:
        self._store, self._blobs, self._settings, self._hyok_keys = store, blobs, settings, hyok_keys
        self._workspaces, self._index, self._orgs = workspaces, index, organizations
        self._uploads = StateUploads(
            store, blobs, workspaces, index, publisher, max_indexed_bytes=settings.max_indexed_state_bytes
        )
        self._writer = StateWriter(store, blobs, workspaces, index, self._uploads)
        self._stored = StoredState(blobs)
        self._landed = LandedState(store, blobs, self._uploads)

    # creating ----------------------------------------------------------------------------
    def create(
        self, principal: Principal, workspace_id: str, attrs: dict[str, Any], run_id: str | None = None
    ) -> StateVersion:
        ws = self._workspaces.get(principal, workspace_id, Action.WRITE_STATE)
        self._require_lock(principal)(ws)
        if principal.kind is PrincipalKind.RUN:
            run_id = principal.subject_id  # a run's terraform writes for its own run, whatever it names
        serial, md5 = state_versions.require_serial(attrs), state_versions.require_md5(attrs)
        lineage = state_versions.optional_lineage(attrs)
        force = bool(attrs.get("force", False))
        if attrs.get("state") in (None, ""):
            hyok = hyok_uploads.pending_data_key(self._hyok_keys, ws, attrs) if hyok_state.is_hyok(ws) else None
            json_outputs = attrs.get("json-state-outputs") or None
            if json_outputs is not None:
                pointer = "/data/attributes/json-state-outputs"
                st.parse_outputs(st.load_json(st.decode_base64(json_outputs, pointer), "json-state-outputs"))
            lock_rule = self._require_lock(principal)
            return self._uploads.create_pending(
                principal, ws, serial, md5, lineage, force, run_id, json_outputs, lock_rule, hyok
            )
        raw = st.decode_base64(attrs["state"], "/data/attributes/state")
        self._check_size(len(raw))
        if st.md5_hex(raw) != md5:
            raise Invalid("md5 does not match the MD5 of the decoded state", pointer="/data/attributes/md5")
        if hyok_state.is_hyok(ws) or any(attrs.get(name) is not None for name in hyok_state.ATTRIBUTES):
            lock_rule = self._require_lock(principal)
            return hyok_state.store_upload(
                self._writer, self._hyok_keys, principal, ws, attrs, raw, serial, lineage, run_id, lock_rule
            )
        parsed = st.parse_state(raw)
        # As TFC: the version's serial and lineage are the attributes', even where the file says otherwise (go-tfe's
        # own tests send one fixture file under several serials); serials still never go backwards and a foreign
        # lineage is still refused unless forced.
        parsed = dataclasses.replace(parsed, serial=serial, lineage=lineage or parsed.lineage)
        # A state equal to the current one is a version of its own, as in TFC (and as the two-step upload does).
        lock_rule = self._require_lock(principal)
        return self._writer.store(principal, ws.id, raw, parsed, force, run_id, lock_rule, repeat_creates=True)

    def _check_size(self, size: int, http_backend: bool = False) -> None:
        check_size(size, self._settings.max_inline_state_bytes, http_backend)

    @staticmethod
    def _require_lock(principal: Principal) -> LockRule:
        def rule(ws: Workspace) -> None:
            if not LockService.holds(principal, ws):
                raise Conflict(f"workspace {ws.name} must be locked by you before writing state")

        return rule

    # two-step uploads (state_uploads): finalized by writes only ----------------------------
    def finalize_uploaded(self, blob_key: str) -> StateVersion | None:
        """The `blob.landed` event's handler: an uploaded object is there (`landed.py`)."""
        return self._landed.landed(blob_key)

    def index_uploaded(self, event: dict[str, Any]) -> None:
        """The events worker's handler for `state.uploaded`."""
        self._uploads.index_uploaded(event)

    def ensure_not_pending(self, ws: Workspace) -> None:
        """LockService unlock check (the client's next write, so it may finalize an upload that landed before its
        event was handled): a workspace with an outstanding upload stays locked."""
        pending_id = ws.extra.get(PENDING_KEY)
        if pending_id and self._uploads.finalize(self._find(pending_id)).status == PENDING:
            raise Conflict(
                f"cannot unlock workspace {ws.name}: latest state version is still pending "
                f"({pending_id}); upload it or force-unlock"
            )

    # reading -----------------------------------------------------------------------------
    def _find(self, sv_id: str) -> StateVersion:
        return self._store.load(sv_id)

    def get(self, principal: Principal, sv_id: str, action: Action = Action.READ_STATE) -> StateVersion:
        sv = self._find(sv_id)
        try:
            self._workspaces.get(principal, sv.workspace_id, action)
        except NotFound as exc:
            raise NotFound(f"state version {sv_id} not found") from exc
        return sv  # as recorded: an upload that landed but is not finalized yet reads `pending`

    def current(self, principal: Principal, workspace_id: str, action: Action = Action.READ_STATE) -> StateVersion:
        ws = self._workspaces.get(principal, workspace_id, action)
        if not ws.current_state_version_id:
            raise NotFound(f"workspace {ws.name} has no current state version")
        return self._find(ws.current_state_version_id)

    def current_or_none(self, ws: Workspace) -> StateVersion | None:
        return self._find(ws.current_state_version_id) if ws.current_state_version_id else None

    def list_for(self, principal: Principal, ws: Workspace, status: str | None = None) -> list[StateVersion]:
        self._workspaces.authorize(principal, Action.READ_STATE, ws)
        found = self._store.list_for_workspace(ws.id, newest_first=True)
        return [sv for sv in found if not status or sv.status == status]

    def upload_urls(self, sv: StateVersion) -> tuple[str | None, str | None, str | None]:
        """A pending version's state, JSON state and (Hold Your Own Key: instead of the JSON state, which holds
        every value in the clear) sanitized state upload URLs."""
        if sv.status != PENDING:
            return None, None, None
        ttl = self._settings.presign_ttl_s
        if sv.hyok_data_key_id:
            return self._blobs.presign_put(sv.blob_key, ttl), None, self._blobs.presign_put(sv.sanitized_blob_key, ttl)
        return self._blobs.presign_put(sv.blob_key, ttl), self._blobs.presign_put(sv.json_blob_key, ttl), None

    def download_url(self, principal: Principal, sv_id: str, json_state: bool = False) -> str:
        sv = self.get(principal, sv_id)
        if sv.status != FINALIZED or (json_state and not sv.has_json_state):
            raise NotFound(f"state version {sv_id} has no {'JSON ' if json_state else ''}state to download")
        sv.require_data()
        ttl = self._settings.presign_ttl_s
        if not json_state and hyok_state.other_workspaces_run(
            principal, sv
        ):  # terraform_remote_state: the sanitized copy
            return self.sanitized_download_url(principal, sv_id)
        self._check_readable(sv)
        if json_state:
            sv = self._stored.json_state(sv)
            return self._blobs.presign_get(sv.json_blob_key, ttl, sv.json_version)
        sv = self._stored.state(sv)
        return self._blobs.presign_get(sv.blob_key, ttl, sv.blob_version)

    def sanitized_download_url(self, principal: Principal, sv_id: str) -> str:
        """A Hold Your Own Key version's sanitized copy (HCP's `sanitized-state-download-url`)."""
        return hyok_state.sanitized_url(self._blobs, self.get(principal, sv_id), self._settings.presign_ttl_s)

    def _check_readable(self, sv: StateVersion) -> None:
        if sv.hyok_data_key_id and self._hyok_keys is not None:
            self._hyok_keys.check_readable(sv.hyok_data_key_id)

    def document(self, principal: Principal, sv_id: str) -> dict[str, Any]:
        """The parsed state of a finalized version (READ_STATE): the web UI's view and diff."""
        return self.parsed(self.get(principal, sv_id))

    def parsed(self, sv: StateVersion) -> dict[str, Any]:
        """The parsed state of a version a checked call returned (`get`, `list_for`); NotFound until it is
        finalized or once its data is deleted."""
        if sv.status != FINALIZED:
            raise NotFound(f"state version {sv.id} is {sv.status}; it has no state yet")
        sv.require_data()
        doc = st.load_json(hyok_state.readable_state(self._blobs, sv))
        return doc if isinstance(doc, dict) else {}

    def state_url(self, sv: StateVersion) -> str:
        """A presigned GET of the state of a version a checked call returned (the http backend's 307 for a state
        too large for a Lambda answer)."""
        self._check_readable(sv)
        sv = self._stored.state(sv)
        return self._blobs.presign_get(sv.blob_key, self._settings.presign_ttl_s, sv.blob_version)

    def iter_state(self, sv: StateVersion) -> Iterator[bytes]:
        """The state's bytes as finalized (`stored.py`; Conflict when they are not there). The bytes themselves are
        checked against the recorded md5 before the first one is served: a damaged object (a flipped bit under an
        unchanged size and sidecar) is refused, never streamed as good state."""
        self._check_readable(sv)
        sv = self._stored.state(sv)
        return iter([verified_state(self._blobs, sv)])

    def _can(self, principal: Principal, action: Action, ws: Workspace) -> bool:
        try:
            self._workspaces.authorize(principal, action, ws)
        except (Forbidden, NotFound):
            return False
        return True

    # outputs and resources ---------------------------------------------------------------
    def outputs(self, principal: Principal, sv_id: str) -> tuple[list[StoredOutput], bool]:
        """A state version's outputs, and whether the caller may see sensitive values (READ_STATE), as TFC's
        `/state-versions/:id/outputs` and `include=outputs` show them (go-tfe reads sensitive values there)."""
        sv = self.get(principal, sv_id, Action.READ_STATE_OUTPUTS)
        found = self._index.outputs_of(sv.id) if sv.status == FINALIZED else []
        ws = self._workspaces.load(sv.workspace_id)
        return found, bool(found) and self._can(principal, Action.READ_STATE, ws)

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
        return self._index.search(self._orgs.lookup(organization).key, readable, text, type_, provider)
