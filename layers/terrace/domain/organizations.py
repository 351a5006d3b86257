"""Organizations, the tenant boundary, and what their attributes may be: their name, email, default
execution mode and the settings Terrace keeps for them. Each check raises `Invalid` pointing at the attribute;
`check_email` and `check_setting` return the value to store. `OrgView` is what permissions depend on."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from terrace.domain import limits
from terrace.domain.errors import Invalid


@dataclass(frozen=True)
class OrgView:
    """The facts about an organization that permissions depend on. `key` is its storage key: the name it was
    created with, which tokens, workspaces, teams and projects are bound to and which a rename does not change."""

    key: str
    owners: tuple[str, ...]
    disabled: bool = False  # a site admin disabled it: only site admins reach it
    user_tokens_enabled: bool = True  # off: users' API tokens are refused here (web sessions are not tokens)


@dataclass(frozen=True)
class Organization:
    id: str
    key: str  # the storage key (see the module docstring); equal to `name` until a rename
    name: str
    email: str
    created_at: str
    owners: tuple[str, ...]
    default_execution_mode: str
    settings: dict[str, Any]

    @property
    def view(self) -> OrgView:
        return OrgView(
            self.key,
            self.owners,
            bool(self.settings.get("is-disabled")),
            self.settings.get("user-tokens-enabled", True) is not False,
        )

    @property
    def allow_force_delete_workspaces(self) -> bool:
        return bool(self.settings.get("allow-force-delete-workspaces", False))

    @property
    def cost_estimation_enabled(self) -> bool:
        """Runs get a cost estimate (on unless the organization turned it off, as go-tfe expects)."""
        return self.settings.get("cost-estimation-enabled", True) is not False


NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,62}\Z")

UPDATABLE = (
    "email",
    "session-timeout",
    "session-remember",
    "collaborator-auth-policy",
    "default-execution-mode",
    "allow-force-delete-workspaces",
    "cost-estimation-enabled",
    "assessments-enforced",
    "speculative-plan-management-enabled",
    "fork-pull-request-plans-enabled",
    "speculative-plan-comments-enabled",
    "user-tokens-enabled",
    "aggregated-commit-status-enabled",
)

# Settings Terrace keeps and returns (with their default); the booleans are checked to be booleans.
BOOLEAN_SETTINGS = {
    "allow-force-delete-workspaces": False,
    "cost-estimation-enabled": True,
    "assessments-enforced": False,  # health assessments for every workspace (`domain/assessments.py`)
    # VCS-driven runs (services/vcs/): a new push to a pull request cancels its older speculative plans; pull
    # requests from forks get a speculative plan (never a sensitive variable) only when the organization allows it
    "speculative-plan-management-enabled": True,
    "fork-pull-request-plans-enabled": False,
    # a pull request's speculative plan ends with one comment on it, edited in place (services/vcs/comments.py)
    "speculative-plan-comments-enabled": False,
    # Hold Your Own Key: every new workspace encrypts its state with the organization's key (`services/hyok/`)
    "enforce-hyok": False,
    "user-tokens-enabled": True,  # users' API tokens reach the organization (`OrgView.user_tokens_enabled`)
    # one commit status per commit for all the organization's workspaces (services/vcs/aggregated_statuses.py)
    "aggregated-commit-status-enabled": False,
}


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
