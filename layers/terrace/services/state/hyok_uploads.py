"""A Hold Your Own Key workspace's two-step state upload, as HCP Terraform's: `POST .../state-versions` without
`state` answers a pending version with `hosted-state-upload-url` for the encrypted state and
`sanitized-state-upload-url` for its sanitized copy (no `hosted-json-state-upload-url`: a JSON state holds every
value in the clear). Whoever may write the workspace's state uploads both, in either order; the version becomes
current once both landed and were checked (`landed_copy`): the state is an envelope (`ENVELOPE_MAGIC`) whose MD5 is
the one declared, the copy is a sanitized state of the declared serial and lineage. An upload that is not encrypted
is deleted and the version discarded with the reason: the server keeps no plaintext state of such a workspace.

The data key is the one the create names (`hyok-encrypted-dek`, `hyok-key-version`, `hyok-context`, as an agent's
inline upload: recorded in the transaction that creates the version) or, without them, the workspace's data key for
encryption (HCP's `hyok-data-key-for-encryption`: its current state's), which must still be readable.
"""

from __future__ import annotations

from typing import Any

from terrace.adapters.blobs import BlobStore
from terrace.domain import state as st
from terrace.domain.errors import Invalid
from terrace.domain.sanitized_state import ENVELOPE_MAGIC, is_sanitized
from terrace.domain.state_versions import StateVersion
from terrace.domain.workspace import Workspace
from terrace.services.state.current import HYOK_DATA_KEY
from terrace.services.state.hyok_state import ATTRIBUTES, HyokKeys, context_attribute, text_attribute
from terrace.services.state.store import WriteOp

SANITIZED_MAX_BYTES = 64 * 1024 * 1024  # a sanitized copy the landing reads and parses


def pending_data_key(keys: HyokKeys | None, ws: Workspace, attrs: dict[str, Any]) -> tuple[str, list[WriteOp]]:
    """The data key a pending version of `ws` is encrypted with, and the writes that record it (none for the
    workspace's own); Invalid when there is none, Conflict when its customer key version is revoked."""
    if keys is None:
        raise Invalid("this server keeps no Hold Your Own Key data keys", pointer="/data/attributes/hyok-encrypted-dek")
    if attrs.get("json-state-outputs") is not None:
        raise Invalid(
            f"workspace {ws.name} keeps its state encrypted with its organization's key (Hold Your Own Key): "
            "json-state-outputs would hold its outputs in the clear; the sanitized copy gives them",
            pointer="/data/attributes/json-state-outputs",
        )
    if any(attrs.get(name) is not None for name in ATTRIBUTES[1:]):
        wrapped, version = text_attribute(attrs, "hyok-encrypted-dek"), text_attribute(attrs, "hyok-key-version")
        context = context_attribute(attrs.get("hyok-context"))
        if context.get("workspace") != ws.id:
            raise Invalid("hyok-context must name the workspace", pointer="/data/attributes/hyok-context")
        return keys.record(ws.organization, ws.id, wrapped, version, context)
    data_key_id = ws.extra.get(HYOK_DATA_KEY)
    if not data_key_id:
        raise Invalid(
            f"workspace {ws.name} has no data key for encryption yet: name the wrapped data key of this state "
            "(hyok-encrypted-dek, hyok-key-version, hyok-context), as its agent does",
            pointer="/data/attributes/hyok-encrypted-dek",
        )
    keys.check_readable(str(data_key_id))
    return str(data_key_id), []


def landed_copy(blobs: BlobStore, sv: StateVersion, size: int) -> tuple[str, int] | None:
    """The MD5 and size of a pending HYOK version's sanitized copy once it and the encrypted state (`size` bytes,
    its MD5 already checked) both landed; None while the copy has not. Invalid naming what is wrong otherwise (the
    caller discards the version): a state that is not an envelope is deleted first."""
    head = blobs.get_range(sv.blob_key, 0, len(ENVELOPE_MAGIC)) if size >= len(ENVELOPE_MAGIC) else b""
    if head != ENVELOPE_MAGIC:
        blobs.delete(sv.blob_key)
        raise Invalid("the uploaded state is not encrypted with the workspace's data key: it was deleted, not kept")
    info = blobs.head(sv.sanitized_blob_key)
    if info is None:
        return None
    if info.size > SANITIZED_MAX_BYTES:
        raise Invalid(f"the sanitized state is {info.size} bytes; at most {SANITIZED_MAX_BYTES} are read")
    raw = blobs.get(sv.sanitized_blob_key)
    doc = st.load_json(raw, "sanitized state")
    if not isinstance(doc, dict) or not is_sanitized(doc):
        raise Invalid("the sanitized state is not a Terraform state whose sensitive values are redacted")
    parsed = st.parse_state(raw)
    if parsed.serial != sv.serial or (sv.lineage and parsed.lineage != sv.lineage):
        raise Invalid(
            f"the sanitized state has serial {parsed.serial} and lineage {parsed.lineage!r}; serial {sv.serial} "
            f"and lineage {sv.lineage!r} were declared"
        )
    return st.md5_hex(raw), len(raw)
