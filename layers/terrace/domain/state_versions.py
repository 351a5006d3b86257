"""The stored record of a state version and the rules for writing one (pure functions).

A state version's metadata is stored by the state area's store (`services/state/store.py`), its raw state in the
blob store (`state_blob_key`); `decide` is the serial/lineage rule every write of a current state goes through.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from terrace.domain import limits
from terrace.domain.errors import Conflict, Invalid, NotFound
from terrace.domain.workspace import Workspace

PENDING, FINALIZED, DISCARDED = "pending", "finalized", "discarded"
# a finalized version's state file (TFE's "backing data"): soft-deleted data can be restored, deleted data is gone
DATA_PRESENT, DATA_SOFT_DELETED, DATA_DELETED = "present", "soft_deleted", "deleted"


def state_blob_key(workspace_id: str, sv_id: str) -> str:
    return f"state/{workspace_id}/{sv_id}.tfstate"


def json_state_blob_key(workspace_id: str, sv_id: str) -> str:
    return f"state/{workspace_id}/{sv_id}.json"


def sanitized_state_blob_key(workspace_id: str, sv_id: str) -> str:
    """A Hold Your Own Key version's sanitized copy (`domain/sanitized_state.py`); its state blob is ciphertext."""
    return f"state/{workspace_id}/{sv_id}.sanitized.tfstate"


@dataclass(frozen=True)
class StateVersion:
    id: str
    workspace_id: str
    organization: str
    serial: int
    lineage: str
    md5: str
    status: str
    created_at: str
    version: int = 1
    size: int = 0
    created_by: str | None = None  # user id (None for organization/run tokens)
    run_id: str | None = None
    force: bool = False
    terraform_version: str = ""
    format_version: int = 4
    resources_processed: bool = False
    summary: dict[str, Any] = field(default_factory=dict)
    output_ids: tuple[str, ...] = ()
    json_outputs: str | None = None  # the client's base64 json-state-outputs, until finalized
    has_json_state: bool = False
    json_md5: str | None = None  # the JSON state's MD5 and size when it was finalized (what reads check)
    json_size: int | None = None
    # S3 (a versioned bucket): the object versions finalized; reads read those, whatever a replayed upload URL
    # wrote over them since
    blob_version: str | None = None
    json_version: str | None = None
    error: str | None = None
    outputs_pending: bool = False  # a two-step upload without json-state-outputs: the events worker extracts them
    index_error: str | None = None  # the events worker found the uploaded state disagreeing with its declaration
    backing_data: str = DATA_PRESENT  # services/state/backing_data.py
    # Hold Your Own Key: the state blob is the agent's envelope, opened by this encrypted data key only on an agent;
    # the server reads the sanitized copy (its MD5 and size as stored)
    hyok_data_key_id: str | None = None
    sanitized_md5: str | None = None
    sanitized_size: int | None = None

    def require_data(self) -> None:
        """Its state file, unless soft-deleted or deleted (then it is 404, as TFE answers)."""
        if self.backing_data != DATA_PRESENT:
            raise NotFound(f"the state data of state version {self.id} is {self.backing_data.replace('_', ' ')}")

    @property
    def blob_key(self) -> str:
        return state_blob_key(self.workspace_id, self.id)

    @property
    def json_blob_key(self) -> str:
        return json_state_blob_key(self.workspace_id, self.id)

    @property
    def sanitized_blob_key(self) -> str:
        return sanitized_state_blob_key(self.workspace_id, self.id)


# Write rules ------------------------------------------------------------------------------
def require_serial(attrs: dict[str, Any], name: str = "serial") -> int:
    value = attrs.get(name)
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= limits.SERIAL_MAX:
        raise Invalid(
            f"{name} is required and must be an integer from 0 to {limits.SERIAL_MAX}",
            pointer=f"/data/attributes/{name}",
        )
    return value


def optional_lineage(attrs: dict[str, Any]) -> str | None:
    lineage = attrs.get("lineage") or None
    if lineage is not None and (not isinstance(lineage, str) or len(lineage) > limits.LINEAGE_MAX):
        raise Invalid(
            f"lineage must be a string of at most {limits.LINEAGE_MAX} characters", pointer="/data/attributes/lineage"
        )
    return lineage


def require_md5(attrs: dict[str, Any]) -> str:
    value = attrs.get("md5")
    if not isinstance(value, str) or len(value) != 32 or any(c not in "0123456789abcdefABCDEF" for c in value):
        raise Invalid("md5 is required: the hex MD5 of the raw state", pointer="/data/attributes/md5")
    return value.lower()


def decide(ws: Workspace, serial: int, lineage: str | None, md5: str, force: bool) -> bool:
    """True when the state equals the current one (idempotent); raises Conflict when it must be refused."""
    if ws.current_state_version_id is None or force:
        return False
    if lineage and ws.state_lineage and lineage != ws.state_lineage:
        raise Conflict(
            f"lineage {lineage!r} does not match the workspace's state lineage {ws.state_lineage!r}; "
            "use force to replace it"
        )
    current = ws.state_serial or 0
    if serial == current and md5 == ws.state_md5:
        return True
    if serial <= current:
        raise Conflict(
            f"serial {serial} must be greater than the current serial {current} "
            "(the content differs); use force to override"
        )
    return False
