"""Teams of an organization; the owners team's id is derived from its organization."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 ._-]{0,127}\Z")

VISIBILITIES = ("secret", "organization")
OWNERS = "owners"  # the owners team's name (every organization has one from its creation)


@dataclass(frozen=True)
class ScimLink:
    group_id: str
    group_name: str
    sync_paused: bool
    updated_at: str


@dataclass(frozen=True)
class Team:
    id: str
    name: str
    organization: str
    org_access: dict[str, bool]
    visibility: str
    sso_team_id: str
    users: tuple[str, ...]
    owners: bool
    allow_member_token_management: bool
    version: int
    scim: ScimLink | None = None  # the SCIM group whose members the team follows (`services/admin/scim_groups.py`)


def owners_team_id(organization: str) -> str:
    """The owners team's id is derived from its organization: every organization has exactly one."""
    return "team-" + hashlib.sha256(f"owners#{organization}".encode()).hexdigest()[:16]
