"""What a run's task stages ask of the features that take part in them (run tasks, OPA policy evaluations).

A run passes through task stages as HCP Terraform's do (`pre_plan`, `post_plan`, `pre_apply`; `domain/task_stages.py`
holds the stage entity, `services/runs/task_stages.py` the service that moves a run through them). The stage service
knows no feature: the composition root registers each feature's `StageParticipant`, and the service

1. calls `begin(context)` on each participant when the run reaches the stage; a participant records its own results
   (task results, policy evaluations) as pending, queues its slow work (never blocks the caller) and returns their
   ids (the stage's `task-results` / `policy-evaluations` relationships), or `[]` when nothing of it applies;
2. asks `verdict(context)` whenever a participant reports progress by publishing `stage_progressed(...)` on the
   events queue (and when the reaper looks at a stage that outlived its time limit), and moves the run on once no
   participant is `pending`;
3. calls `overridden(context)` when an allowed user overrides the stage (`task-stages/:id/actions/override`).

Optionally, a participant may also have `prepare(context) -> ids`: asked for each stage when the run is created,
what it returns is listed as a `pending` stage from then on (HCP Terraform lists a run's stages and their pending
task results at once; run tasks prepare theirs); `begin` is still asked when the run reaches the stage.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Protocol

from terrace.domain.runs import Run

STAGE_PROGRESSED = "task_stage.progressed"

# pending: not finished; passed: everything passed or failed only advisory; failed: a mandatory failure nobody may
# override; awaiting_override: mandatory failures an override may pass; errored: the participant could not decide.
Verdict = Literal["pending", "passed", "failed", "awaiting_override", "errored"]


@dataclass(frozen=True)
class StageContext:
    run: Run
    stage_id: str  # ts-...
    stage: str  # pre_plan | post_plan | pre_apply
    plan_json_key: str | None = None  # the stored (redacted) plan JSON, from post_plan on


def stage_progressed(stage_id: str, run_id: str) -> dict[str, Any]:
    """The event a participant publishes when one of its results changed (a callback arrived, an evaluation ended)."""
    return {"type": STAGE_PROGRESSED, "stage_id": stage_id, "run_id": run_id}


class StageParticipant(Protocol):
    kind: str  # the task stage relationship it fills: "task-results" or "policy-evaluations"

    def begin(self, context: StageContext) -> list[str]: ...

    def verdict(self, context: StageContext) -> Verdict: ...

    def overridden(self, context: StageContext) -> None: ...
