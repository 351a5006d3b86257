"""Ephemeral workspaces (HCP Terraform's auto-destroy): when a workspace's resources are destroyed on their own.

Two attributes, as HCP names them: `auto-destroy-at`, a moment (ISO 8601 with a zone), and
`auto-destroy-activity-duration`, `<number><unit>` with the unit `d` or `h` ("14d", "3h"): the workspace's
resources are destroyed that long after its last activity (a run that applied: it changed the state), and
`auto-destroy-at` then reads the moment that gives. At most one of them is sent in a request; null clears it.

Due workspaces are found through a sparse index: one marker item per workspace that has a due time
(`services/workspaces/store_auto_destroy.py`), ordered by when the sweep must next look at it (`wake_at`): the
24-hour and 12-hour reminders (HCP's `workspace:auto_destroy_reminder`), then the due time. A workspace without
auto-destroy has no marker; the sweep's query of a deployment without ephemeral workspaces returns nothing.
Pure: no I/O; times are epoch seconds or ISO strings (`clock.iso`)."""

from __future__ import annotations

import hashlib
import re
from datetime import datetime, timedelta
from typing import Any

from terrace.domain import clock
from terrace.domain.errors import Invalid

AT, DURATION = "auto-destroy-at", "auto-destroy-activity-duration"
REMINDER_HOURS = (24, 12)  # HCP's reminders before an auto-destroy run
SOURCE = "tfe-auto-destroy"  # the run source of the destroy runs this queues
DURATION_RE = re.compile(r"^([0-9]{1,4})([dh])\Z")

REMINDER_EVENT = "workspace.auto_destroy_reminder"
RESULT_EVENT = "workspace.auto_destroy_run_results"
REMINDER_TRIGGER = "workspace:auto_destroy_reminder"
RESULT_TRIGGER = "workspace:auto_destroy_run_results"


def parse_at(value: Any) -> str | None:
    """`auto-destroy-at` as sent: None clears it; otherwise a moment with a zone, stored as `clock.iso`. A moment
    already past is taken as HCP's API takes it (go-tfe's own fixture sends 2025-01-01): the workspace is due, and the
    sweep's next look queues its destroy run."""
    if value is None:
        return None
    pointer = f"/data/attributes/{AT}"
    if not isinstance(value, str) or len(value) > 64:
        raise Invalid(f"{AT} must be an ISO 8601 timestamp such as 2030-01-01T00:00:00Z, or null", pointer=pointer)
    try:
        moment = datetime.fromisoformat(value.strip().replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError as exc:
        raise Invalid(f"{AT} must be an ISO 8601 timestamp such as 2030-01-01T00:00:00Z", pointer=pointer) from exc
    if moment.tzinfo is None:
        raise Invalid(f"{AT} must name its time zone (for example 2030-01-01T00:00:00Z)", pointer=pointer)
    return clock.iso(moment)


def parse_duration(value: Any) -> str | None:
    """`auto-destroy-activity-duration` as sent: None clears it; otherwise `<1..9999><d|h>`."""
    if value is None:
        return None
    match = DURATION_RE.match(value) if isinstance(value, str) else None
    if match is None or int(match.group(1)) == 0:
        raise Invalid(
            f"{DURATION} must be a number of days or hours such as 14d or 3h (units d and h), or null",
            pointer=f"/data/attributes/{DURATION}",
        )
    return value


def duration_seconds(duration: str) -> int:
    match = DURATION_RE.match(duration)
    if match is None:
        raise ValueError(duration)
    return int(match.group(1)) * (86400 if match.group(2) == "d" else 3600)


def due_after_activity(duration: str, activity: datetime | None = None) -> str:
    """The due time of an activity-based workspace whose last activity was `activity` (now by default)."""
    return clock.iso((activity or clock.utcnow()) + timedelta(seconds=duration_seconds(duration)))


def decide(attributes: dict[str, Any], current_at: str | None, current_duration: str | None) -> tuple[Any, Any]:
    """The (auto_destroy_at, auto_destroy_activity_duration) a workspace gets from `attributes` (unchanged when
    neither is sent). A duration schedules from now; setting a moment leaves the activity-based schedule. A value
    sent back as it was read changes nothing (clients send back what they read: a due time just past, or the
    moment a duration gave beside that duration)."""
    attributes = {k: v for k, v in attributes.items() if k in (AT, DURATION)}
    if current_at is not None and _same_moment(attributes.get(AT), current_at):
        del attributes[AT]
    if current_duration is not None and attributes.get(DURATION) == current_duration:
        del attributes[DURATION]  # the duration stays, and with it the moment it gave (a null moment beside it too)
        if attributes.get(AT, "") is None:
            del attributes[AT]
    sends_at, sends_duration = AT in attributes, DURATION in attributes
    if not sends_at and not sends_duration:
        return current_at, current_duration
    at = parse_at(attributes[AT]) if sends_at else None
    duration = parse_duration(attributes[DURATION]) if sends_duration else None
    if at is not None and duration is not None:
        raise Invalid(f"{AT} and {DURATION} cannot both be set; send one of them", pointer=f"/data/attributes/{AT}")
    if duration is not None:
        return due_after_activity(duration), duration
    if at is not None:
        return at, None
    if sends_at:
        return None, None  # a cleared moment ends the schedule, an activity-based one too
    return (None if current_duration is not None else current_at), None  # the moment a duration gave goes with it


def _same_moment(sent: Any, stored: str) -> bool:
    if not isinstance(sent, str):
        return False
    try:
        return datetime.fromisoformat(sent.strip().replace("Z", "+00:00")).timestamp() == _epoch(stored)
    except ValueError:
        return False


def _epoch(iso_time: str) -> float:
    return datetime.fromisoformat(iso_time.replace("Z", "+00:00")).timestamp()


def wake_at(due_iso: str, reminded: tuple[int, ...]) -> float:
    """When the sweep must next look at a workspace due at `due_iso`: its next reminder not sent, else the due time."""
    due = _epoch(due_iso)
    for hours in REMINDER_HOURS:
        if hours not in reminded:
            return due - hours * 3600
    return due


def reminders_due(due_iso: str, reminded: tuple[int, ...], now: float) -> list[int]:
    """The reminders (hours before) to send now: those whose time passed, not sent yet, while the run is ahead."""
    due = _epoch(due_iso)
    if now >= due:
        return []
    return [h for h in REMINDER_HOURS if h not in reminded and now >= due - h * 3600]


def is_due(due_iso: str, now: float) -> bool:
    return now >= _epoch(due_iso)


def run_id_for(workspace_id: str, due_iso: str) -> str:
    """The id of the destroy run queued for this due time: a second sweep's conditional write refuses it."""
    digest = hashlib.sha256(f"{workspace_id}#{due_iso}".encode()).hexdigest()[:16]
    return f"run-ad{digest}"
