"""Where a run came from (its `source`, as HCP Terraform names it) and how long each of its phases took (from its
status timestamps). Pure: the run pages show both, the runs list a compact label of them."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from terrace.domain import runs as rs
from terrace.domain.auto_destroy import SOURCE as AUTO_DESTROY
from terrace.domain.run_triggers import RUN_SOURCE as RUN_TRIGGER

# HCP Terraform's run sources (go-tfe's `RunSource`, and `tfe-run-trigger`: RUN_TRIGGER)
API = "tfe-api"
UI = "tfe-ui"
CONFIGURATION_VERSION = "tfe-configuration-version"  # a configuration upload queued it (auto-queue-runs)
CLI_CLOUD = "terraform+cloud"  # terraform/tofu with a `cloud` block
CLI_REMOTE = "terraform"  # terraform/tofu with the `remote` backend

SOURCE_LABELS = {
    API: "API",
    UI: "UI",
    CONFIGURATION_VERSION: "API (configuration upload)",
    RUN_TRIGGER: "Run trigger",
    AUTO_DESTROY: "Auto-destroy",
    CLI_CLOUD: "CLI",
    CLI_REMOTE: "CLI",
}


def source_of_client(terraform_version: str | None, integration: str | None) -> str:
    """The source of a run created through the API by this client: terraform and OpenTofu send `Terraform-Version`
    (and, with a `cloud` block, `X-Terraform-Integration: cloud`; Terraform's own `cloud` block sends it too)."""
    if not terraform_version:
        return API
    return CLI_CLOUD if (integration or "").strip().lower() == "cloud" else CLI_REMOTE


def source_label(source: str) -> str:
    return SOURCE_LABELS.get(source, source or "API")


# The phase a run is in while it has each status (the statuses a run passes through without waiting are absent)
_PHASE_OF = {
    rs.PENDING: "Pending",
    rs.PLAN_QUEUED: "Plan queued",
    rs.PLANNING: "Planning",
    rs.COST_ESTIMATING: "Cost estimation",
    rs.PRE_PLAN_RUNNING: "Pre-plan tasks",
    rs.PRE_PLAN_COMPLETED: "Pre-plan tasks",
    rs.POST_PLAN_RUNNING: "Post-plan tasks and policies",
    rs.POST_PLAN_AWAITING_DECISION: "Post-plan tasks and policies",
    rs.PRE_APPLY_RUNNING: "Pre-apply tasks",
    rs.PRE_APPLY_COMPLETED: "Pre-apply tasks",
    rs.PLANNED: "Awaiting confirmation",
    rs.COST_ESTIMATED: "Awaiting confirmation",
    rs.POST_PLAN_COMPLETED: "Awaiting confirmation",
    rs.PLANNED_AND_SAVED: "Awaiting confirmation",
    rs.CONFIRMED: "Apply queued",
    rs.APPLY_QUEUED: "Apply queued",
    rs.APPLYING: "Applying",
}


@dataclass(frozen=True)
class PhaseTime:
    phase: str
    seconds: float
    ongoing: bool = False  # the run is in this phase now (its time runs until `now`)


def _at(iso: str) -> datetime:
    return datetime.fromisoformat(iso.replace("Z", "+00:00"))


def phase_times(status_timestamps: dict[str, str], status: str, now: datetime) -> list[PhaseTime]:
    """Time spent in each phase, in the order the run first entered them. A phase the run passed through without
    waiting (0 s) is left out; the phase the run is in now counts until `now`. A status entered twice (a retried
    plan) counts from its latest timestamp, as the run records only that one."""
    steps = sorted(
        ((key.removesuffix("-at").replace("-", "_"), _at(at)) for key, at in status_timestamps.items()),
        key=lambda step: step[1],
    )
    steps = [(name, at) for name, at in steps if name != "plan_queueable"]
    totals: dict[str, float] = {}
    current = ""
    for index, (name, started) in enumerate(steps):
        phase = _PHASE_OF.get(name)
        if phase is None:  # a final status: the run's time ends there
            continue
        last = index == len(steps) - 1
        if last and status in rs.FINAL:
            continue
        ended = now if last else steps[index + 1][1]
        totals[phase] = totals.get(phase, 0.0) + max(0.0, (ended - started).total_seconds())
        current = phase if last and name == status else current
    return [
        PhaseTime(phase, seconds, phase == current)
        for phase, seconds in totals.items()
        if seconds >= 0.5 or phase == current
    ]


def total_seconds(status_timestamps: dict[str, str], status: str, now: datetime) -> float:
    """From the run's creation to its end (to `now` while it goes on)."""
    times = [_at(at) for at in status_timestamps.values()]
    if not times:
        return 0.0
    end = max(times) if status in rs.FINAL else now
    return max(0.0, (end - min(times)).total_seconds())


def duration(seconds: float) -> str:
    """1h 2m, 3m 4s, 12s, <1s."""
    whole = int(seconds)
    if whole < 1:
        return "<1s"
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h {minutes}m"
    return f"{minutes}m {secs}s" if minutes else f"{secs}s"
