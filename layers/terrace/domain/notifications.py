"""Notification configurations (TFC's `notification-configurations`): the entity, its attribute rules and the
mapping from run statuses to triggers. Pure: storage is `services/notifications/store.py`, payloads are
`domain/notification_payloads.py`, URL rules `domain/destinations.py`.

A configuration belongs to a subscribable: a workspace (run triggers) or a team (`change_request:created`).
Its `token` is write-only: it keys the HMAC signature of generic payloads and is never returned.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from terrace.domain import runs as r
from terrace.domain.destinations import Allowance, check_url
from terrace.domain.errors import Invalid

GENERIC, SLACK, TEAMS, EMAIL = "generic", "slack", "microsoft-teams", "email"
DESTINATION_TYPES = (GENERIC, SLACK, TEAMS, EMAIL)
WORKSPACE, TEAM, PROJECT = "workspaces", "teams", "projects"  # a project's: its workspaces' runs

# go-tfe v1.41's NotificationTriggerType list, and HCP's team trigger
RUN_CREATED, RUN_PLANNING, RUN_NEEDS_ATTENTION = "run:created", "run:planning", "run:needs_attention"
RUN_APPLYING, RUN_COMPLETED, RUN_ERRORED = "run:applying", "run:completed", "run:errored"
WORKSPACE_TRIGGERS = (
    RUN_CREATED,
    RUN_PLANNING,
    RUN_NEEDS_ATTENTION,
    RUN_APPLYING,
    RUN_COMPLETED,
    RUN_ERRORED,
    "assessment:drifted",
    "assessment:failed",
    "assessment:check_failure",
    "workspace:auto_destroy_reminder",
    "workspace:auto_destroy_run_results",
)
TEAM_TRIGGERS = ("change_request:created",)
ASSESSMENT_MESSAGES = {  # the health assessment triggers' messages (`domain/assessments.py`)
    "assessment:drifted": "Drift Detected",
    "assessment:check_failure": "Check Failure",
    "assessment:failed": "Health Assessment Failed",
}

NAME_MAX = 255
TOKEN_MAX = 1024
EMAILS_MAX = 100  # addresses, and users
EMAIL_MAX = 254
RESPONSES_KEPT = 10  # the last delivery responses kept on a configuration
EMAIL_RE = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+\Z")

# run status -> trigger. `run:needs_attention` only for the status a run rests in (awaiting a confirmation, also
# after its policies and run tasks passed; awaiting a policy override), never for one it passed on its way (an
# auto-applied plan is `planned` for an instant)
_BY_STATUS = {
    r.PENDING: RUN_CREATED,
    r.PLANNING: RUN_PLANNING,
    r.APPLYING: RUN_APPLYING,
    r.APPLIED: RUN_COMPLETED,
    r.PLANNED_AND_FINISHED: RUN_COMPLETED,
    r.PLANNED_AND_SAVED: RUN_COMPLETED,
    r.ERRORED: RUN_ERRORED,
    r.CANCELED: RUN_ERRORED,
    r.FORCE_CANCELED: RUN_ERRORED,
}
_RESTING = {
    r.PLANNED: RUN_NEEDS_ATTENTION,
    r.COST_ESTIMATED: RUN_NEEDS_ATTENTION,
    r.POST_PLAN_COMPLETED: RUN_NEEDS_ATTENTION,
    r.POST_PLAN_AWAITING_DECISION: RUN_NEEDS_ATTENTION,
    "policy_override": RUN_NEEDS_ATTENTION,
}


def triggers_of(statuses: Iterable[str], final: str) -> list[tuple[str, str]]:
    """(trigger, run status) for each status a run passed in one write, `final` the one it rests in."""
    found: list[tuple[str, str]] = []
    for status in statuses:
        trigger = _BY_STATUS.get(status)
        if status == final and trigger is None:
            trigger = _RESTING.get(status)
        if trigger is not None and (trigger, status) not in found:
            found.append((trigger, status))
    return found


def message_of(trigger: str, status: str) -> str:
    """The `message` of a notification, as TFC words it ("Run Canceled" for `run:errored`)."""
    if trigger == RUN_NEEDS_ATTENTION:
        return "Run Needs Attention"
    if trigger == RUN_CREATED:
        return "Run Created"
    return "Run " + " ".join(part.capitalize() for part in status.split("_"))


@dataclass
class NotificationConfiguration:
    id: str
    subscribable_type: str  # WORKSPACE, TEAM or PROJECT
    subscribable_id: str
    organization: str  # the organization's key
    name: str
    destination_type: str
    enabled: bool
    url: str | None
    triggers: list[str]
    created_at: str
    updated_at: str
    token_ciphertext: str | None = None  # the token, encrypted (never returned)
    email_addresses: list[str] = field(default_factory=list)
    email_user_ids: list[str] = field(default_factory=list)
    delivery_responses: list[dict[str, Any]] = field(default_factory=list)  # newest last
    version: int = 1

    @property
    def allowed_triggers(self) -> tuple[str, ...]:
        return TEAM_TRIGGERS if self.subscribable_type == TEAM else WORKSPACE_TRIGGERS


def _pointer(name: str) -> str:
    return f"/data/attributes/{name}"


def check_name(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise Invalid("name is required", pointer=_pointer("name"))
    if len(value) > NAME_MAX or any(ord(c) < 32 for c in value):
        raise Invalid(f"name must be 1..{NAME_MAX} printable characters", pointer=_pointer("name"))
    return value


def check_destination(value: Any) -> str:
    if value not in DESTINATION_TYPES:
        raise Invalid(
            f"destination-type must be one of {', '.join(DESTINATION_TYPES)}", pointer=_pointer("destination-type")
        )
    return str(value)


def check_enabled(value: Any) -> bool:
    if not isinstance(value, bool):
        raise Invalid("enabled must be true or false", pointer=_pointer("enabled"))
    return value


def check_triggers(value: Any, allowed: tuple[str, ...]) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(t, str) for t in value):
        raise Invalid("triggers must be a list of strings", pointer=_pointer("triggers"))
    for trigger in value:
        if trigger not in allowed:
            raise Invalid(
                f"invalid trigger {trigger[:64]!r}: one of {', '.join(allowed)}", pointer=_pointer("triggers")
            )
    return list(dict.fromkeys(value))


def check_token(value: Any) -> str | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str) or len(value) > TOKEN_MAX:
        raise Invalid(f"token must be a string of at most {TOKEN_MAX} characters", pointer=_pointer("token"))
    return value


def check_emails(value: Any) -> list[str]:
    if value is None:
        return []
    pointer = _pointer("email-addresses")
    if not isinstance(value, list) or len(value) > EMAILS_MAX:
        raise Invalid(f"email-addresses must be a list of at most {EMAILS_MAX} addresses", pointer=pointer)
    for address in value:
        if not isinstance(address, str) or len(address) > EMAIL_MAX or not EMAIL_RE.match(address):
            raise Invalid(f"{str(address)[:64]!r} is not an e-mail address", pointer=pointer)
    return list(dict.fromkeys(value))


def check_url_for(destination_type: str, value: Any, allowance: Allowance) -> str | None:
    """The URL a destination type needs (generic, slack and microsoft-teams), checked as a destination."""
    if destination_type == EMAIL:
        return None
    if value is None or value == "":
        raise Invalid(f"url is required for destination-type {destination_type}", pointer=_pointer("url"))
    return check_url(value, "url", allowance).url


def user_ids(relationships: Mapping[str, Any]) -> list[str] | None:
    """The `users` relationship (`{data: [{type: users, id}]}`), None when absent."""
    if "users" not in relationships:
        return None
    data = (relationships.get("users") or {}).get("data") if isinstance(relationships.get("users"), dict) else None
    pointer = "/data/relationships/users/data"
    if data is None:
        return []
    if not isinstance(data, list) or len(data) > EMAILS_MAX:
        raise Invalid(f"users must be a list of at most {EMAILS_MAX} users", pointer=pointer)
    ids = []
    for entry in data:
        if not isinstance(entry, dict) or entry.get("type") != "users" or not isinstance(entry.get("id"), str):
            raise Invalid("each user is {type: users, id}", pointer=pointer)
        ids.append(entry["id"])
    return list(dict.fromkeys(ids))


def kept(responses: list[dict[str, Any]], response: dict[str, Any]) -> list[dict[str, Any]]:
    """The configuration's responses with `response` added, the oldest dropped past RESPONSES_KEPT."""
    return [*responses, response][-RESPONSES_KEPT:]
