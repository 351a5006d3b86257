"""The workspace queue and the per-organization job queue.

Runs of a workspace execute one at a time in creation order: the head run holds the workspace lock
(holder `run:<id>`). When the head reaches a final state, the lock passes to the next pending run in
the same transaction. Speculative runs skip the workspace queue. Each phase becomes a job in its
organization's job queue, on a lane: apply ▸ plan ▸ speculative.
"""

from __future__ import annotations

import copy
import dataclasses
import logging

from terrace.adapters.job_queue import JobQueue
from terrace.adapters.lanes import LaneMessage, Lanes
from terrace.config import Settings
from terrace.domain import clock
from terrace.domain import runs as rs
from terrace.domain.agent_pools import queue_key as agent_queue_key
from terrace.domain.cost_estimation import CE_CANCELED
from terrace.domain.errors import NotFound
from terrace.domain.jobs import JobMessage
from terrace.domain.runs import Run
from terrace.domain.task_stages import PRE_PLAN
from terrace.domain.workspace import Workspace, WorkspaceLock
from terrace.services.access.accounts import AccountService
from terrace.services.optimistic import optimistic
from terrace.services.runs.store import ConditionFailed, RunStore, WorkspaceWrite, WriteOp
from terrace.services.runs.task_stages import TaskStages
from terrace.services.workspaces.workspaces import WorkspaceService

log = logging.getLogger("terrace.scheduler")


def lane_of(run: Run, phase: str) -> str:
    if run.assessment or run.query or run.test:
        return "speculative"  # health assessments, query runs and module test runs: always the lowest lane
    if phase == "apply":
        return "apply"
    return "speculative" if run.plan_only else "plan"


def queue_of(run: Run) -> str:
    """The job queue a run's phases wait in: its organization's (Terrace's runners), or its agent pool's."""
    return agent_queue_key(run.organization, run.agent_pool_id) if run.agent_pool_id else run.organization


def run_lock(run: Run) -> WorkspaceLock:
    return WorkspaceLock(
        holder=f"run:{run.id}", username=run.created_by, reason=f"Locked by run {run.id}", created_at=clock.now_iso()
    )


def queue_phase(run: Run, phase: str, at: str) -> None:
    """Mark `phase` queued for a fresh first attempt."""
    state = run.phase(phase)
    state.mark(rs.P_QUEUED, at)
    state.queued_at = at
    state.attempt = 1
    state.runner_id = None
    state.heartbeat_at = None
    run.transition(rs.PLAN_QUEUED if phase == "plan" else rs.APPLY_QUEUED, at)
    run.queued_at = at


class _Taken(Exception):
    """The new run's id is taken: not a lost race to retry."""


class RunScheduler:
    def __init__(
        self,
        store: RunStore,
        workspaces: WorkspaceService,
        queue: JobQueue,
        accounts: AccountService,
        settings: Settings,
        stages: TaskStages | None = None,
        lanes: Lanes | None = None,
    ) -> None:
        self._lanes = lanes  # the dispatcher's lanes (`scaler.py`): every runnable phase is sent to its own
        self._store = store
        self._workspaces = workspaces
        self._queue = queue
        self._accounts = accounts
        self._settings = settings
        self.stages = stages

    def hold(self, run: Run, stage: str, at: str) -> bool:
        """The run reached task stage `stage`: True when something takes part in it (the run then waits in
        `<stage>_running`; the caller writes it and queues nothing), False to go on as without stages."""
        if self.stages is None or run.query or run.test or self.stages.enter(run, stage) is None:
            return False  # a query run (`domain/query_runs.py`) or a module test run has no task stage
        run.transition(rs.STAGE_RUNNING[stage], at)
        return True

    def start_plan(self, run: Run, at: str) -> bool:
        """Queue the run's plan (True: enqueue it once written), or hold it in its pre-plan task stage."""
        if self.hold(run, PRE_PLAN, at):
            return False
        queue_phase(run, "plan", at)
        return True

    def enqueue(self, run: Run, phase: str, delay_s: int = 0) -> None:
        state = run.phase(phase)
        message = JobMessage(
            job_id=state.id, run_id=run.id, phase="apply" if phase == "apply" else "plan", attempt=state.attempt
        )
        self.send_to_lane(
            run, lane_of(run, phase), message, delay_s
        )  # first: a dispatcher woken by the enqueue sees it
        self._queue.enqueue(queue_of(run), lane_of(run, phase), message.model_dump(), delay_s)

    def send_to_lane(self, run: Run, lane: str, message: JobMessage, delay_s: int = 0) -> None:
        """The one place a runnable phase goes to the dispatcher's lanes, so a runner of its organization is made
        sure of. An agent pool's phase is not sent: its agents long-poll for it, no runner is started for it."""
        if self._lanes is None or run.agent_pool_id:
            return
        body = LaneMessage(run.organization, message.job_id, message.run_id, message.phase, message.attempt)
        self._lanes.send(lane, body, delay_s)

    def ensure_queued(self, run: Run, phase: str) -> bool:
        """Re-index a queued job missing from its organization's queue (lost between a take and its claim,
        or between a transition and its enqueue); True when it had to. Its lane message is sent again either way
        (it may have been lost; a duplicate is deleted by the dispatcher)."""
        state = run.phase(phase)
        if any(q.job_id == state.id and q.attempt == state.attempt for q in self._queue.queued(queue_of(run))):
            message = JobMessage(job_id=state.id, run_id=run.id, phase="apply" if phase == "apply" else "plan",
                                 attempt=state.attempt)  # fmt: skip
            self.send_to_lane(run, lane_of(run, phase), message)
            return False
        self.enqueue(run, phase)
        return True

    def _next_pending(self, workspace_id: str, after: str | None = None) -> Run | None:
        for run in reversed(self._store.list_for_workspace(workspace_id)):  # oldest first
            if run.status == rs.PENDING and not run.plan_only and run.id != after:
                return run
        return None

    def becomes_current(self, ws: Workspace, run: Run) -> bool:
        """A new run becomes the workspace's current run when nothing else is underway (as in HCP: the CLI
        then shows "Waiting for the manually locked workspace to be unlocked" for a user-locked workspace)."""
        if run.plan_only or not ws.current_run_id:
            return not run.plan_only
        try:
            return self._store.load(ws.current_run_id).final
        except NotFound:
            return True

    def _head_is_busy(self, ws: Workspace) -> bool:
        if ws.lock is not None:
            return True  # a user holds it, or the head run does
        if ws.current_run_id:
            try:
                current = self._store.load(ws.current_run_id)
            except NotFound:
                return False
            return not current.final and current.status != rs.PENDING  # a pending head is promoted, not waited on
        return False

    def admit(self, run: Run, extra: list[WriteOp], *, may_start: bool) -> tuple[Run, bool, bool]:
        """Write the new `run` and its workspace's change (latest run, count, current run) in one transaction.
        When `may_start` and the run becomes the head of a free workspace in which no older run waits, the same
        write starts its plan (queued, or held in its pre-plan stage) and gives it the lock: what `promote` does
        next, without writing the run twice. Returns the run as written, whether it started and whether its plan
        is to be enqueued. A run whose id is taken raises ConditionFailed (run triggers, auto-destroy)."""
        created = copy.deepcopy(run)  # each attempt decides from the pending run again

        def step() -> tuple[Run, bool, bool]:
            ws, now = self._workspaces.load(run.workspace_id), clock.now_iso()
            candidate = copy.deepcopy(created)
            current = self.becomes_current(ws, candidate)
            updated = dataclasses.replace(
                ws,
                latest_run_id=candidate.id,
                runs_count=ws.runs_count + 1,
                current_run_id=candidate.id if current else ws.current_run_id,
                version=ws.version + 1,
                updated_at=now,
            )
            started = queued = False
            if may_start and current and ws.lock is None and self._next_pending(ws.id) is None:
                started, queued = True, self.start_plan(candidate, now)
                updated = dataclasses.replace(updated, lock=run_lock(candidate))
            try:
                self._store.save([(candidate, None)], WorkspaceWrite(updated, ws.version), {}, extra)
            except ConditionFailed:
                if self._store.exists(candidate.id):
                    raise _Taken from None
                raise
            return candidate, started, queued

        try:
            return optimistic(step, attempts=8, exhausted=f"workspace {run.workspace_id} is busy; retry")
        except _Taken:
            raise ConditionFailed(f"run {run.id} exists") from None

    def promote(self, workspace_id: str) -> Run | None:
        """Start the oldest pending run if the workspace is free. Safe to call any time, from anywhere."""

        def step() -> tuple[Run, bool] | None:
            ws = self._workspaces.load(workspace_id)
            if self._head_is_busy(ws):
                return None
            run = self._next_pending(ws.id)
            if run is None:
                return None
            expected, now = run.version, clock.now_iso()
            queued = self.start_plan(run, now)
            taken = dataclasses.replace(
                ws,
                current_run_id=run.id,
                latest_run_id=ws.latest_run_id or run.id,
                lock=run_lock(run),
                version=ws.version + 1,
                updated_at=now,
            )
            self._store.save([(run, expected)], WorkspaceWrite(taken, ws.version), {run.id: rs.PENDING})
            return run, queued

        promoted = optimistic(step, attempts=8, exhausted=f"workspace {workspace_id} queue is busy; retry")
        if promoted is None:
            return None
        if promoted[1]:
            self.enqueue(promoted[0], "plan")
        return promoted[0]

    def finish(self, run: Run, expected: int, status: str, error: str | None = None) -> Run:
        """Put `run` in a final status, release its workspace and promote the next run, atomically."""
        previous = {run.id: run.status}
        now = clock.now_iso()
        run.transition(status, now)
        for phase in (run.plan, run.apply):
            if not phase.final:  # a phase that will never run or was cut short
                ended = rs.P_ERRORED if status == rs.ERRORED else rs.P_CANCELED
                phase.mark(rs.P_UNREACHABLE if phase.status == rs.P_PENDING else ended, now)
        if run.cost_estimate is not None and not run.cost_estimate.final:  # it ended before its estimate
            run.cost_estimate.mark(CE_CANCELED, now)
        if error:
            run.error_message = error
        ws = self._workspaces.load(run.workspace_id)
        if run.plan_only:
            stale = ws.lock is not None and ws.lock.holder == f"run:{run.id}"  # its terraform died holding it
            unlocked = dataclasses.replace(ws, lock=None, version=ws.version + 1, updated_at=now)
            self._store.save([(run, expected)], WorkspaceWrite(unlocked, ws.version) if stale else None, previous)
            self.revoke_tokens(run)
            return run
        released = ws.lock is not None and ws.lock.holder == f"run:{run.id}"
        updated = dataclasses.replace(ws, lock=None if released else ws.lock, version=ws.version + 1, updated_at=now)
        writes: list[tuple[Run, int | None]] = [(run, expected)]
        promoted, queued = None, False
        if updated.lock is None:
            promoted = self._next_pending(ws.id, after=run.id)
            if promoted is not None:
                previous[promoted.id] = promoted.status
                writes.append((promoted, promoted.version))
                queued = self.start_plan(promoted, now)
                updated = dataclasses.replace(updated, current_run_id=promoted.id, lock=run_lock(promoted))
        self._store.save(writes, WorkspaceWrite(updated, ws.version), previous)
        if promoted is not None and queued:
            self.enqueue(promoted, "plan")
        self.revoke_tokens(run)
        return run

    def revoke_tokens(self, run: Run) -> None:
        for token_id in run.token_ids:
            try:
                self._accounts.revoke_token(token_id)
            except Exception:
                log.info("run token %s already gone", token_id)
