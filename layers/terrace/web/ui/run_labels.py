"""How the UI names a run's status for people (HCP Terraform's plain labels), the colour group each falls in, and
relative times ("5 min ago"). Presentation only: the API keeps its status strings."""

from __future__ import annotations

from datetime import UTC, datetime

from terrace.domain import clock
from terrace.domain import runs as rs

# status -> (label, group); the group is the label's colour and the workspace list's status filter
LABELS: dict[str, tuple[str, str]] = {
    rs.PENDING: ("Pending", "queued"),
    rs.PLAN_QUEUED: ("Plan queued", "queued"),
    rs.PLANNING: ("Planning", "running"),
    rs.PLANNED: ("Needs confirmation", "attention"),
    rs.COST_ESTIMATING: ("Estimating cost", "running"),
    rs.COST_ESTIMATED: ("Needs confirmation", "attention"),
    rs.PLANNED_AND_SAVED: ("Plan saved", "attention"),
    rs.CONFIRMED: ("Confirmed", "queued"),
    rs.APPLY_QUEUED: ("Apply queued", "queued"),
    rs.APPLYING: ("Applying", "running"),
    rs.APPLIED: ("Applied", "done"),
    rs.PLANNED_AND_FINISHED: ("No changes", "done"),
    rs.DISCARDED: ("Discarded", "ended"),
    rs.CANCELED: ("Canceled", "ended"),
    rs.FORCE_CANCELED: ("Force canceled", "ended"),
    rs.ERRORED: ("Errored", "errored"),
}
# the workspace list's status filter: value -> what it shows
GROUPS = {
    "attention": "Needs attention",
    "errored": "Errored",
    "running": "Running or queued",
    "done": "Applied or no changes",
    "ended": "Discarded or canceled",
    "none": "No runs yet",
}


def label(status: str) -> str:
    return LABELS.get(status, (status.replace("_", " ").capitalize(), "queued"))[0]


def group(status: str | None) -> str:
    """The status filter a workspace whose latest run has `status` (None: no run) falls in; queued runs count as
    running."""
    if status is None:
        return "none"
    found = LABELS.get(status, ("", "queued"))[1]
    return "running" if found == "queued" else found


def tone(status: str) -> str:
    """The colour of the label: attention (amber), errored (red), running and queued (blue), done (green), ended
    (grey)."""
    return LABELS.get(status, ("", "queued"))[1]


def ago(iso: str | None, now: float | None = None) -> str:
    """An API timestamp as a relative time: "just now", "5 min ago", "3 h ago", "2 days ago", else the date."""
    if not iso:
        return ""
    try:
        at = datetime.fromisoformat(iso.replace("Z", "+00:00"))
    except ValueError:
        return iso
    seconds = max(0, int((now if now is not None else clock.epoch()) - at.astimezone(UTC).timestamp()))
    for size, unit in ((86400 * 30, ""), (86400, "day"), (3600, "h"), (60, "min")):
        if seconds >= size:
            if not unit:
                return at.strftime("%Y-%m-%d")
            count = seconds // size
            return f"{count} {unit}{'s' if unit == 'day' and count > 1 else ''} ago"
    return "just now"
