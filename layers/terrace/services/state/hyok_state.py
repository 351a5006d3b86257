"""The state of a Hold Your Own Key workspace (`docs/features/hyok.md`): written as an envelope (ciphertext under a
data key the customer's key wrapped) with a sanitized copy beside it. The server stores both and the wrapped data key
(through `HyokKeys`, a port the composition root fills from `services/hyok/`), reads only the sanitized copy
(outputs, the resource index, the explorer, the UI), and serves the ciphertext to whoever may read the state; once
the customer key version that wrapped a version's data key is revoked, that ciphertext is no longer served.

The agent uploads it inline (`store_upload`); whoever may write the state may also upload it in HCP's two steps
(`hyok_uploads.py`, checked when it lands). What cannot be done without the plaintext is refused with the reason: a
plain state (`terraform state push`, a local or CLI-driven apply through the `cloud` block, the http backend), a
rollback (it rewrites the state's serial).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, Protocol

from terrace.adapters.blobs import BlobDamaged, BlobStore
from terrace.domain import limits
from terrace.domain import state as st
from terrace.domain.errors import Conflict, Invalid, NotFound
from terrace.domain.principal import Principal, PrincipalKind
from terrace.domain.sanitized_state import ENVELOPE_MAGIC, is_sanitized
from terrace.domain.state_versions import FINALIZED, StateVersion
from terrace.domain.workspace import Workspace
from terrace.services.state.store import WriteOp

if TYPE_CHECKING:
    from terrace.services.state.http_backend import LockRule
    from terrace.services.state.writes import StateWriter

ATTRIBUTES = ("sanitized-state", "hyok-encrypted-dek", "hyok-key-version", "hyok-context")
CONTEXT_MAX = 8


class HyokKeys(Protocol):
    def record(
        self, organization: str, workspace_id: str, encrypted_dek: str, key_version: str, context: dict[str, str]
    ) -> tuple[str, list[WriteOp]]:
        """The id of a new encrypted data key of the organization's primary HYOK configuration and the writes that
        record it (for the caller's transaction: nothing is written here); Conflict when it has none available or
        `key_version` is revoked."""
        ...

    def check_readable(self, data_key_id: str) -> None:
        """Conflict when the data key's customer key version is revoked (what it wrapped can no longer be read)."""
        ...


def is_hyok(ws: Workspace) -> bool:
    return ws.extra.get("hyok-enabled") is True


def refuse_plain(ws: Workspace, what: str = "a plain state") -> Invalid:
    return Invalid(
        f"workspace {ws.name} keeps its state encrypted with its organization's key (Hold Your Own Key): {what} "
        "cannot be written to it; only a run on an agent of its HYOK configuration writes its state, encrypted",
        pointer="/data/attributes/state",
    )


def text_attribute(attrs: dict[str, Any], name: str) -> str:
    value = attrs.get(name)
    if not isinstance(value, str) or not value or len(value) > limits.TEXT_ATTRIBUTE_MAX * 16:
        raise Invalid(f"{name} is required for a HYOK state version", pointer=f"/data/attributes/{name}")
    return value


def context_attribute(raw: Any) -> dict[str, str]:
    if not isinstance(raw, dict) or not raw or len(raw) > CONTEXT_MAX:
        raise Invalid("hyok-context must be an object of strings", pointer="/data/attributes/hyok-context")
    if not all(isinstance(k, str) and isinstance(v, str) and len(k) + len(v) < 512 for k, v in raw.items()):
        raise Invalid("hyok-context must be an object of strings", pointer="/data/attributes/hyok-context")
    return dict(raw)


def checked_upload(
    ws: Workspace, attrs: dict[str, Any], sealed: bytes, serial: int, lineage: str | None
) -> tuple[bytes, st.ParsedState, str, str, dict[str, str]]:
    """The sanitized copy, parsed, and the wrapped data key, its key version and context of an agent's upload;
    Invalid for anything else (a blob that is not an envelope, a copy that still holds a sensitive value)."""
    if not is_hyok(ws):
        raise Invalid(
            f"workspace {ws.name} does not use Hold Your Own Key", pointer="/data/attributes/hyok-encrypted-dek"
        )
    if not sealed.startswith(ENVELOPE_MAGIC):
        raise refuse_plain(ws)
    sanitized = st.decode_base64(attrs.get("sanitized-state"), "/data/attributes/sanitized-state")
    doc = st.load_json(sanitized, "sanitized-state")
    if not isinstance(doc, dict) or not is_sanitized(doc):
        raise Invalid(
            "sanitized-state must be a state whose sensitive values are redacted",
            pointer="/data/attributes/sanitized-state",
        )
    parsed = st.parse_state(sanitized)
    if parsed.serial != serial or (lineage and parsed.lineage != lineage):
        raise Invalid("sanitized-state has another serial or lineage", pointer="/data/attributes/sanitized-state")
    wrapped, version = text_attribute(attrs, "hyok-encrypted-dek"), text_attribute(attrs, "hyok-key-version")
    return sanitized, parsed, wrapped, version, context_attribute(attrs.get("hyok-context"))


def readable_state(blobs: BlobStore, sv: StateVersion) -> bytes:
    """The state the server may read of a finalized version: the sanitized copy of a HYOK version, the state
    itself otherwise; Conflict when it is not what was recorded."""
    if not sv.hyok_data_key_id:
        from terrace.services.state.uploads import verified_state

        return verified_state(blobs, sv)
    try:
        raw = blobs.get(sv.sanitized_blob_key)
    except BlobDamaged:
        raw = b""
    if st.md5_hex(raw) != sv.sanitized_md5:
        raise Conflict(f"the sanitized state of {sv.id} does not match its record; it is not served")
    return raw


def other_workspaces_run(principal: Principal, sv: StateVersion) -> bool:
    """Another workspace's run reading a HYOK version (`terraform_remote_state`): it gets the sanitized copy, as HCP
    serves it; the workspace's own runs and its readers get the ciphertext."""
    return (
        bool(sv.hyok_data_key_id) and principal.kind is PrincipalKind.RUN and principal.workspace_id != sv.workspace_id
    )


def sanitized_url(blobs: BlobStore, sv: StateVersion, ttl_s: int) -> str:
    if sv.status != FINALIZED or not sv.hyok_data_key_id:
        raise NotFound(f"state version {sv.id} has no sanitized state (it is not encrypted with a customer key)")
    sv.require_data()
    readable_state(blobs, sv)  # still the copy recorded
    return blobs.presign_get(sv.sanitized_blob_key, ttl_s)


def store_upload(
    writer: StateWriter,
    keys: HyokKeys | None,
    principal: Principal,
    ws: Workspace,
    attrs: dict[str, Any],
    sealed: bytes,
    serial: int,
    lineage: str | None,
    run_id: str | None,
    lock_rule: LockRule,
) -> StateVersion:
    """An agent's encrypted state and its sanitized copy as the workspace's new current version."""
    sanitized, parsed, wrapped, key_version, context = checked_upload(ws, attrs, sealed, serial, lineage)
    if keys is None:
        raise Invalid("this server keeps no Hold Your Own Key data keys", pointer="/data/attributes/hyok-encrypted-dek")
    if context.get("workspace") != ws.id:
        raise Invalid("hyok-context must name the workspace", pointer="/data/attributes/hyok-context")
    parsed = dataclasses.replace(parsed, serial=serial, lineage=lineage or parsed.lineage)
    data_key_id, key_writes = keys.record(ws.organization, ws.id, wrapped, key_version, context)
    force = bool(attrs.get("force", False))
    return writer.store(  # the data key is recorded in the transaction that makes the version current, or not at all
        principal, ws.id, sealed, parsed, force, run_id, lock_rule, repeat_creates=True, hyok=(sanitized, data_key_id),
        with_writes=key_writes,
    )  # fmt: skip
