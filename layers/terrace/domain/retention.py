"""Data retention policies of organizations and workspaces: `delete-older` (than a number of days) or
`dont-delete`, in the API shape they were set in. A workspace's own policy overrides its organization's."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from terrace.domain.organizations import Organization
from terrace.domain.workspace import Workspace

DELETE_OLDER, DONT_DELETE = "delete-older", "dont-delete"

LEGACY_TYPE = "data-retention-policies"

TYPES = {
    LEGACY_TYPE: DELETE_OLDER,
    "data-retention-policy-delete-olders": DELETE_OLDER,
    "data-retention-policy-dont-deletes": DONT_DELETE,
}

ORG_SETTING = "data-retention-policy"  # in `Organization.settings`

WORKSPACE_FIELD = "data_retention_policy"  # in `Workspace.extra`

MAX_DAYS = 36_500

DAYS = "delete-older-than-n-days"


@dataclass(frozen=True)
class RetentionPolicy:
    id: str
    kind: str  # DELETE_OLDER | DONT_DELETE
    days: int | None  # for DELETE_OLDER
    legacy: bool = False  # set through the v202311 API: shown as `data-retention-policies`

    @property
    def resource_type(self) -> str:
        if self.legacy:
            return LEGACY_TYPE
        return (
            "data-retention-policy-delete-olders" if self.kind == DELETE_OLDER else "data-retention-policy-dont-deletes"
        )

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def policy_from(value: Any) -> RetentionPolicy | None:
    """The policy stored in an organization's settings or a workspace's extra (None: none set)."""
    if not isinstance(value, dict) or value.get("kind") not in (DELETE_OLDER, DONT_DELETE):
        return None
    return RetentionPolicy(str(value["id"]), value["kind"], value.get("days"), bool(value.get("legacy")))


def of_organization(org: Organization) -> RetentionPolicy | None:
    return policy_from(org.settings.get(ORG_SETTING))


def of_workspace(ws: Workspace) -> RetentionPolicy | None:
    return policy_from(ws.extra.get(WORKSPACE_FIELD))
