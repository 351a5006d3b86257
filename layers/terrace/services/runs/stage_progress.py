"""Moving a run through its task stages: verdicts, overrides, the end of a run.

`advance(stage_id)` runs on each `task_stage.progressed` event a participant publishes, on the run's own
`run.status_changed` into `<stage>_running` (a participant may have decided before the run was written) and on each
reaper tick for a run still waiting (participants report what outlived their time limit as failed or errored). It
asks every participant that took part for its verdict and, once none is pending, decides the stage and moves the run:

- passed: on exactly as without the stage (the plan is queued after `pre_plan`; after `post_plan` the run goes
  where its plan leads, `Run.continuation`: planned_and_finished, planned_and_saved, confirmed, or awaiting
  confirmation in `post_plan_completed`; the apply is queued after `pre_apply`);
- failed or errored: the run ends `errored`, with the stage's message;
- awaiting_override (`post_plan` only; elsewhere a failure): the run waits in `post_plan_awaiting_decision` until
  someone with `manage-policy-overrides` overrides the stage (`override`) or discards the run.

The stage is written first, then the run: a step that loses a race is run again and finds the stage decided.
"""

from __future__ import annotations

import logging
from typing import Any

from terrace.domain import clock, limits
from terrace.domain import runs as rs
from terrace.domain import task_stages as ts
from terrace.domain.errors import Conflict, NotFound
from terrace.domain.principal import Principal
from terrace.domain.runs import Run
from terrace.domain.task_stages import TaskStage
from terrace.services.access.authz import Action
from terrace.services.runs.runs import RunService
from terrace.services.runs.scheduler import RunScheduler, queue_phase
from terrace.services.runs.stage_participants import Verdict
from terrace.services.runs.store import RunStore, retrying
from terrace.services.runs.task_stages import TaskStages, context
from terrace.services.workspaces.workspaces import WorkspaceService

log = logging.getLogger("terrace.task_stages")

_FAILURES = {"failed": ts.TS_FAILED, "errored": ts.TS_ERRORED}


def combined(verdicts: list[Verdict]) -> str | None:
    """The stage's status from its participants' verdicts; None while one is pending."""
    if "pending" in verdicts:
        return None
    for verdict in ("errored", "failed", "awaiting_override"):
        if verdict in verdicts:
            return ts.TS_AWAITING_OVERRIDE if verdict == "awaiting_override" else _FAILURES[verdict]
    return ts.TS_PASSED


class StageProgress:
    def __init__(
        self,
        store: RunStore,
        stages: TaskStages,
        scheduler: RunScheduler,
        runs: RunService,
        workspaces: WorkspaceService,
    ) -> None:
        self._store, self._stages, self._scheduler, self._runs = store, stages, scheduler, runs
        self._workspaces = workspaces

    # reads -------------------------------------------------------------------------------
    def get(self, principal: Principal, stage_id: str) -> tuple[TaskStage, Run]:
        """A stage whose run the caller may read (the same 404 for hidden and absent stages)."""
        missing = NotFound(f"task stage {stage_id} not found")
        run_id = ts.run_of_stage(stage_id)
        if run_id is None:
            raise missing
        try:
            run = self._runs.get(principal, run_id)
        except NotFound as exc:
            raise missing from exc
        stage = self._stages.find(stage_id)
        if stage is None or stage.id not in run.task_stage_ids:
            raise missing
        return stage, run

    def list_for(self, principal: Principal, run_id: str) -> tuple[Run, list[TaskStage]]:
        run = self._runs.get(principal, run_id)
        return run, self._stages.of_run(run)

    def of_run(self, run: Run) -> list[TaskStage]:
        """The stages of a run a checked call of the same request returned (`include=task_stages`)."""
        return self._stages.of_run(run)

    def can_override(self, principal: Principal, run: Run) -> bool:
        return self._workspaces.can(principal, Action.MANAGE_POLICY_OVERRIDES, self._workspaces.load(run.workspace_id))

    # events ------------------------------------------------------------------------------
    def progressed(self, event: dict[str, Any]) -> None:
        """`task_stage.progressed`: a participant's result changed."""
        stage_id = str(event.get("stage_id") or "")
        if ts.run_of_stage(stage_id) is not None:
            self.advance(stage_id)

    def run_changed(self, event: dict[str, Any]) -> None:
        """`run.status_changed`: a run that entered a stage is looked at once (what was decided before the run was
        written); a run that ended cancels the stages it had not finished."""
        run_id, status = str(event.get("run_id") or ""), event.get("to")
        for name, running in rs.STAGE_RUNNING.items():
            if status == running:
                self.advance(ts.stage_id(run_id, name))
        if status in rs.FINAL:
            self.run_ended(run_id)

    def run_ended(self, run_id: str) -> None:
        for stage in self._stages.stored_for(run_id):
            if stage.final:
                continue
            ended = ts.TS_UNREACHABLE if stage.status == ts.TS_PENDING else ts.TS_CANCELED
            stage.mark(ended, clock.now_iso())
            try:
                self._stages.save(stage)
            except Exception:  # decided meanwhile; nothing else waits on it
                log.info("task stage %s changed while its run %s ended", stage.id, run_id)

    # deciding ----------------------------------------------------------------------------
    def advance(self, stage_id: str) -> TaskStage | None:
        """Ask the stage's participants; once none is pending, decide the stage and move its run."""

        def step() -> TaskStage | None:
            stage = self._stages.find(stage_id)
            if stage is None:
                return None
            run = self._store.load(stage.run_id)
            if run.status != rs.STAGE_RUNNING[stage.stage] or stage.status == ts.TS_PENDING:
                return stage  # not waiting in it (not written yet, or moved on)
            if stage.status == ts.TS_RUNNING:
                ctx = context(run, stage)
                decided = combined([p.verdict(ctx) for p in self._stages.taking_part(stage)])
                if decided is None:
                    return stage
                if decided == ts.TS_AWAITING_OVERRIDE and stage.stage != ts.POST_PLAN:
                    decided = ts.TS_FAILED  # only a post-plan stage may wait for a decision
                stage.message = self._message(stage, decided)
                stage.mark(decided, clock.now_iso())
                self._stages.save(stage)
            self._move(run, stage)
            return stage

        return retrying(step)

    @staticmethod
    def _message(stage: TaskStage, status: str) -> str | None:
        label = stage.stage.replace("_", "-")
        if status == ts.TS_FAILED:
            return f"the {label} task stage failed: a mandatory check did not pass"
        if status == ts.TS_ERRORED:
            return f"the {label} task stage errored: a mandatory check could not be completed"
        if status == ts.TS_AWAITING_OVERRIDE:
            return f"the {label} task stage failed and awaits an override"
        return None

    def _move(self, run: Run, stage: TaskStage) -> Run:
        """Move a run waiting in `stage` as the stage was decided."""
        expected, previous, now = run.version, {run.id: run.status}, clock.now_iso()
        if stage.status in (ts.TS_FAILED, ts.TS_ERRORED, ts.TS_CANCELED, ts.TS_UNREACHABLE):
            return self._scheduler.finish(run, expected, rs.ERRORED, stage.message or f"task stage {stage.id} failed")
        if stage.status == ts.TS_AWAITING_OVERRIDE:
            run.transition(rs.POST_PLAN_AWAITING_DECISION, now)
            self._store.save([(run, expected)], None, previous)
            return run
        return self._go_on(run, stage.stage, expected, previous, now)

    def _go_on(self, run: Run, name: str, expected: int, previous: dict[str, str], now: str) -> Run:
        run.transition(rs.STAGE_COMPLETED[name], now)
        if name == ts.PRE_PLAN:
            queue_phase(run, "plan", now)
            self._store.save([(run, expected)], None, previous)
            self._scheduler.enqueue(run, "plan")
            return run
        if name == ts.PRE_APPLY:
            queue_phase(run, "apply", now)
            self._store.save([(run, expected)], None, previous)
            self._scheduler.enqueue(run, "apply")
            return run
        outcome = run.continuation()
        if outcome == rs.PLANNED_AND_FINISHED:
            return self._scheduler.finish(run, expected, outcome)
        if outcome == rs.CONFIRMED:
            return self._runs.confirm(run, expected)
        if outcome != run.status:
            run.transition(outcome, now)
        self._store.save([(run, expected)], None, previous)
        return run

    # overriding --------------------------------------------------------------------------
    def override(
        self, principal: Principal, stage_id: str, comment: str | None = None, *, run_id: str | None = None
    ) -> TaskStage:
        if comment is not None:
            comment = limits.text(comment, "comment", limits.RUN_MESSAGE_MAX, pointer_base="")
        """An owner or a team with manage-policy-overrides passes a stage that awaits an override: each participant
        records it (`overridden`), then the run goes on as if the stage had passed."""
        stage, run = self.get(principal, stage_id)
        if run_id is not None and run.id != run_id:  # the UI's URL names the run too
            raise NotFound(f"task stage {stage_id} not found")
        self._workspaces.authorize(principal, Action.MANAGE_POLICY_OVERRIDES, self._workspaces.load(run.workspace_id))

        def step() -> TaskStage:
            current, run = self._stages.load(stage_id), self._store.load(stage.run_id)
            waiting = run.status == rs.POST_PLAN_AWAITING_DECISION
            if waiting and current.status == ts.TS_PASSED and current.overridden_by:  # overridden; the run not moved
                self._go_on(run, current.stage, run.version, {run.id: run.status}, clock.now_iso())
                return current
            if current.status != ts.TS_AWAITING_OVERRIDE or not waiting:
                raise Conflict(f"task stage {stage_id} is {current.status}; only a stage awaiting an override can be")
            ctx = context(run, current)
            for participant in self._stages.taking_part(current):
                participant.overridden(ctx)
            now = clock.now_iso()
            current.overridden_by = principal.username
            current.status_timestamps["overridden-at"] = now
            current.message = f"overridden by {principal.username}" + (f": {comment}" if comment else "")
            current.mark(ts.TS_PASSED, now)
            self._stages.save(current)
            self._go_on(run, current.stage, run.version, {run.id: run.status}, now)
            return current

        return retrying(step)
