"""Users: who signs in and owns user tokens. A username is letters, digits, - and _."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from terrace.domain import limits
from terrace.domain.errors import Invalid


@dataclass(frozen=True)
class User:
    id: str
    username: str
    email: str
    site_admin: bool
    created_at: str
    suspended: bool = False
    scim_username: str = ""  # provisioned by SCIM (`services/admin/scim_users.py`): its SCIM userName
    scim_updated_at: str = ""
    site_auditor: bool = False  # reads every organization's settings and audit trail, nothing else


def check_username(username: Any) -> str:
    if not isinstance(username, str) or not username or not username.replace("-", "").replace("_", "").isalnum():
        raise Invalid("username must be letters, digits, - and _", pointer="/data/attributes/username")
    return limits.text(username, "username", 64)
