"""Runs beside a workspace's queue: query runs (`query_runs.py`), registry module test runs (`module_test_runs.py`)
and health assessments (`assessments.py`). Each is plan-only, takes no workspace lock, waits for no other run and
is queued at once in the lowest lane (`scheduler.lane_of`); none has a cost estimate. What differs is its kind
(`query`, `test`, `assessment`, `refresh_only`, ...), given as the Run's own fields."""

from __future__ import annotations

from typing import Any

from terrace.domain import clock
from terrace.domain import runs as rs
from terrace.domain.ids import new_id
from terrace.domain.runs import PhaseState, Run
from terrace.domain.workspace import Workspace
from terrace.services.runs.scheduler import RunScheduler
from terrace.services.runs.store import RunStore


def new_side_run(
    ws: Workspace, cv_id: str, *, created_by: str, message: str, source: str, terraform_version: str, **kind: Any
) -> Run:
    """A pending plan-only run of `ws` on configuration version `cv_id`; `kind` sets what makes it a side run."""
    now, tail = clock.now_iso(), new_id("run").split("-", 1)[1]
    run = Run(
        id=f"run-{tail}",
        organization=ws.organization,
        workspace_id=ws.id,
        configuration_version_id=cv_id,
        created_at=now,
        created_by=created_by,
        message=message,
        source=source,
        plan_only=True,
        terraform_version=terraform_version,
        plan=PhaseState(id=f"plan-{tail}"),
        apply=PhaseState(id=f"apply-{tail}"),
        **kind,
    )
    run.transition(rs.PENDING, now)
    run.plan.mark(rs.P_PENDING, now)
    run.apply.mark(rs.P_PENDING, now)
    return run


def queue_side_run(store: RunStore, scheduler: RunScheduler, run: Run, problem: str | None = None) -> Run:
    """Store `run` and queue its plan; with a `problem` (its terraform version cannot be had) store it errored at
    once, not after a runner's timeout."""
    if problem:
        store.save([(run, None)], None, {})
        return scheduler.finish(store.load(run.id), run.version, rs.ERRORED, problem)
    queued = scheduler.start_plan(run, run.created_at)
    store.save([(run, None)], None, {})
    if queued:
        scheduler.enqueue(run, "plan")
    return run
