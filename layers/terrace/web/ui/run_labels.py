"""The UI's one status model: `describe(run)` maps a run's status and its actions to what a person reads (HCP
Terraform's plain labels), a colour and whether the run needs a person (a confirmation, a policy override). The run
page, the runs list, the workspace list and the workspace overview all show `describe`'s answer; the workspace
list's status filter is its `group`. Relative times ("5 min ago") too. Presentation only: the API keeps its status
strings."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from terrace.domain import clock
from terrace.domain import runs as rs
from terrace.domain.runs import Run

# status -> (label, tone) when the run needs nobody; the tone is the label's colour
LABELS: dict[str, tuple[str, str]] = {
    rs.PENDING: ("Pending", "queued"),
    rs.PLAN_QUEUED: ("Plan queued", "queued"),
    rs.PLANNING: ("Planning", "running"),
    rs.PLANNED: ("Planned", "running"),
    rs.COST_ESTIMATING: ("Estimating cost", "running"),
    rs.COST_ESTIMATED: ("Cost estimated", "running"),
    rs.CONFIRMED: ("Confirmed", "queued"),
    rs.APPLY_QUEUED: ("Apply queued", "queued"),
    rs.APPLYING: ("Applying", "running"),
    rs.APPLIED: ("Applied", "done"),
    rs.PLANNED_AND_FINISHED: ("No changes", "done"),
    rs.DISCARDED: ("Discarded", "ended"),
    rs.CANCELED: ("Canceled", "ended"),
    rs.FORCE_CANCELED: ("Force canceled", "ended"),
    rs.ERRORED: ("Errored", "errored"),
    rs.PRE_PLAN_RUNNING: ("Running pre-plan tasks", "running"),
    rs.PRE_PLAN_COMPLETED: ("Pre-plan tasks passed", "queued"),
    rs.POST_PLAN_RUNNING: ("Checking policies and tasks", "running"),
    rs.POST_PLAN_COMPLETED: ("Policies and tasks passed", "queued"),
    rs.PRE_APPLY_RUNNING: ("Running pre-apply tasks", "running"),
    rs.PRE_APPLY_COMPLETED: ("Pre-apply tasks passed", "queued"),
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
# a check's status (a policy, a policy evaluation, a run task, a task stage) -> its label's tone: pass green,
# fail red, a decision awaited amber
RESULT_TONES = {"passed": "done", "overridden": "done", "failed": "errored", "errored": "errored",
                "unreachable": "errored", "awaiting_override": "attention", "running": "running", "pending": "queued",
                "queued": "queued"}  # fmt: skip
COUNTS = (("additions", "to add"), ("changes", "to change"), ("destructions", "to destroy"), ("imports", "to import"))


@dataclass(frozen=True)
class RunStatus:
    """What the UI shows of a run's status: `label`, `tone` (attention amber, errored red, running and queued
    blue, done green, ended grey) and whether a person must act for the run to go on."""

    label: str
    tone: str
    needs_person: bool = False

    @property
    def group(self) -> str:
        """The workspace list's status filter this run falls in (queued runs count as running)."""
        return "running" if self.tone == "queued" else self.tone


NO_RUN = RunStatus("No runs yet", "none")


def describe(run: Run | None) -> RunStatus:
    """The one mapping of a run (its status, its actions, its plan) to what every page shows of it."""
    if run is None:
        return NO_RUN
    if run.status == rs.POST_PLAN_AWAITING_DECISION:
        return RunStatus("Needs policy override", "attention", True)
    if run.status == rs.PLANNED_AND_SAVED:  # a saved plan waits for someone to apply it
        return RunStatus("Plan saved", "attention", True)
    if run.actions(0.0, 0.0)["is-confirmable"]:
        return RunStatus("Needs confirmation", "attention", True)
    if run.status == rs.PLANNED_AND_FINISHED and run.has_changes:
        counts = [f"{getattr(run.plan, name)} {words}" for name, words in COUNTS if getattr(run.plan, name)]
        return RunStatus(f"Planned ({', '.join(counts)})" if counts else "Planned (output changes)", "done")
    text, tone = LABELS.get(run.status, (run.status.replace("_", " ").capitalize(), "queued"))
    return RunStatus(text, tone)


def result_tone(status: str | None) -> str:
    """The tone of a check's status badge (anything else, such as canceled: grey)."""
    return RESULT_TONES.get(status or "", "ended")


def group(run: Run | None) -> str:
    """The status filter a workspace whose current run is `run` (None: no run) falls in."""
    return describe(run).group


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
