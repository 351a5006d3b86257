"""What an organization's attributes may be: its name, email, default execution mode and the settings Terrace
keeps for it. Each check raises `Invalid` pointing at the attribute; `check_email` and `check_setting` return the
value to store."""

from __future__ import annotations

import re
from typing import Any

from terrace.domain import limits
from terrace.domain.errors import Invalid

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$")
UPDATABLE = (
    "email",
    "session-timeout",
    "session-remember",
    "collaborator-auth-policy",
    "default-execution-mode",
    "allow-force-delete-workspaces",
    "cost-estimation-enabled",
)
# Settings Terrace keeps and returns (with their default); the booleans are checked to be booleans.
BOOLEAN_SETTINGS = {"allow-force-delete-workspaces": False, "cost-estimation-enabled": True}


def check_name(name: Any) -> None:
    if not isinstance(name, str) or not NAME_RE.match(name):
        raise Invalid(
            "name must start with a letter or digit and hold only letters, digits, - and _ (max 63)",
            pointer="/data/attributes/name",
        )


def check_email(value: Any) -> str:
    if not isinstance(value, str) or "@" not in value:
        raise Invalid("email is required: an address", pointer="/data/attributes/email")
    return limits.text(value, "email", limits.EMAIL_MAX)


def check_setting(key: str, value: Any) -> Any:
    if key in BOOLEAN_SETTINGS and not isinstance(value, bool):
        raise Invalid(f"{key} must be true or false", pointer=f"/data/attributes/{key}")
    return limits.bounded_json(value, key, limits.EXTRA_ATTRIBUTE_MAX_BYTES)


def check_mode(mode: Any) -> None:
    if mode not in ("remote", "local", "agent"):
        raise Invalid(
            "execution mode must be remote, local or agent", pointer="/data/attributes/default-execution-mode"
        )
