"""A run's task stages (HCP Terraform's `task-stages`): the points of a run where features other than terraform
take part (run tasks, policy evaluations) and decide whether it goes on.

A stage is `pre_plan` (before the plan is queued), `post_plan` (after the plan, before confirmation) or `pre_apply`
(after confirmation, before the apply is queued). Its id is derived from its run's (`ts-<run suffix>-<n>`, n the
stage's order), so a run has at most one stage of each kind and a stage names its run. Statuses (go-tfe
`TaskStageStatus`): `pending` (prepared when the run was created, not reached yet), `running`, then `passed`,
`failed`, `awaiting_override` (a failure an override may pass), `errored`, or `canceled` (the run ended while it
ran) / `unreachable` (the run ended before it).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from terrace.domain.ids import looks_like
from terrace.domain.runs import suffix

PRE_PLAN, POST_PLAN, PRE_APPLY = "pre_plan", "post_plan", "pre_apply"
STAGES = (PRE_PLAN, POST_PLAN, PRE_APPLY)

TS_PENDING, TS_RUNNING, TS_PASSED, TS_FAILED = "pending", "running", "passed", "failed"
TS_AWAITING_OVERRIDE, TS_CANCELED, TS_ERRORED, TS_UNREACHABLE = (
    "awaiting_override",
    "canceled",
    "errored",
    "unreachable",
)
STATUSES = (
    TS_PENDING,
    TS_RUNNING,
    TS_PASSED,
    TS_FAILED,
    TS_AWAITING_OVERRIDE,
    TS_CANCELED,
    TS_ERRORED,
    TS_UNREACHABLE,
)
# Decided: the run has moved on (or ended) because of it.
FINAL = frozenset({TS_PASSED, TS_FAILED, TS_CANCELED, TS_ERRORED, TS_UNREACHABLE})


def stage_id(run_id: str, stage: str) -> str:
    return f"ts-{suffix(run_id)}-{STAGES.index(stage) + 1}"


def run_of_stage(identifier: str) -> str | None:
    """The run a stage id names (None for anything that is not a stage id)."""
    if not looks_like(identifier, "ts"):
        return None
    rest, _, order = identifier[3:].rpartition("-")
    if not rest or order not in ("1", "2", "3"):
        return None
    return f"run-{rest}"


def stage_of(identifier: str) -> str:
    return STAGES[int(identifier.rsplit("-", 1)[1]) - 1]


@dataclass
class TaskStage:
    id: str
    run_id: str
    organization: str
    workspace_id: str
    stage: str
    created_at: str
    updated_at: str
    status: str = TS_PENDING
    status_timestamps: dict[str, str] = field(default_factory=dict)
    # the ids each participant's kind returned ("task-results", "policy-evaluations")
    results: dict[str, list[str]] = field(default_factory=dict)
    message: str | None = None  # why it failed, errored or awaits an override
    started_at_epoch: float | None = None  # when it started running (time limits)
    overridden_by: str | None = None
    version: int = 1

    def mark(self, status: str, at: str) -> None:
        self.status = status
        self.status_timestamps[f"{status.replace('_', '-')}-at"] = at
        self.updated_at = at

    def add(self, kind: str, ids: list[str]) -> None:
        known = self.results.setdefault(kind, [])
        known.extend(i for i in ids if i not in known)

    def ids(self, kind: str) -> list[str]:
        return list(self.results.get(kind, []))

    @property
    def final(self) -> bool:
        return self.status in FINAL
