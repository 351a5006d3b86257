"""The runner that planned a run applies it when it can (its folder holds `.terraform` and the plan file).

Mixed into `JobService` (its claim, finish, store and authorizer): finishing an auto-apply plan whose runner
kept the folder (`keep_for_apply`) claims the run's apply for that runner in the same call, and `held_runs`
tells a runner which of the plans it holds it may still apply, so it drops the others.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from terrace.domain import runs as rs
from terrace.domain.errors import Conflict, NotFound
from terrace.domain.jobs import ClaimRequest, FinishRequest, FinishResponse, HeartbeatRequest, JobSpec
from terrace.domain.principal import Principal
from terrace.domain.runs import Run
from terrace.services.unit_of_work import unit_of_work

if TYPE_CHECKING:
    from terrace.services.access.authz import Authorizer
    from terrace.services.runs.job_retries import JobRetries
    from terrace.services.runs.store import RunStore

log = logging.getLogger("terrace.jobs")


def runner_ref(principal: Principal, runner_id: str) -> str:
    """Who works a job: the runner's own name and the id of the token it authenticated with."""
    return f"{runner_id}@{principal.token_id}"


class ApplyHandoff:
    _store: RunStore
    _authz: Authorizer
    _retries: JobRetries

    def _load(self, principal: Principal, job_id: str) -> tuple[Run, str]:
        raise NotImplementedError

    def release(self, principal: Principal, job_id: str, request: HeartbeatRequest) -> str:
        """A runner or agent that stops hands its job back (`terrace agent` on SIGTERM mid-plan): the attempt is
        lost as if its heartbeats had stopped, under the same rules (`JobRetries`: a plan, or an apply before
        terraform started applying, is queued again for another; an apply that started ends the run errored).
        Returns the run's status."""
        run, name = self._load(principal, job_id)
        state = run.phase(name)
        if run.final or state.status != rs.P_RUNNING or state.runner_id != runner_ref(principal, request.runner_id):
            raise Conflict(f"job {job_id} is not running on {request.runner_id}")
        return self._retries.retry_or_fail(run, name, f"{request.runner_id} stopped and handed the {name} back").status

    def finish(self, principal: Principal, job_id: str, request: FinishRequest) -> Run:
        raise NotImplementedError

    def claim(self, principal: Principal, job_id: str, request: ClaimRequest) -> JobSpec:
        raise NotImplementedError

    def finish_and_continue(self, principal: Principal, job_id: str, request: FinishRequest) -> FinishResponse:
        """`finish`; a plan whose runner kept its folder and whose run went on to apply (auto-apply) gets
        that apply claimed for the same runner. Another runner may have taken it first: then it runs there."""
        with unit_of_work():  # the run, its variables, tasks and policy sets: read once for all of finish's steps
            return self._finish_and_continue(principal, job_id, request)

    def _finish_and_continue(self, principal: Principal, job_id: str, request: FinishRequest) -> FinishResponse:
        run = self.finish(principal, job_id, request)
        if not (request.keep_for_apply and job_id.startswith("plan-") and run.status == rs.APPLY_QUEUED):
            return FinishResponse(run_status=run.status)
        claim = ClaimRequest(runner_id=request.runner_id, attempt=run.apply.attempt)
        try:
            spec = self.claim(principal, run.apply.id, claim)
        except (Conflict, NotFound) as exc:
            log.info("the apply of %s went to another runner: %s", run.id, exc)
            return FinishResponse(run_status=run.status)
        return FinishResponse(run_status=rs.APPLYING, next_job=spec)

    def held_runs(self, principal: Principal, runner_id: str, run_ids: list[str]) -> list[str]:
        """Of the runs whose plan folder a runner holds, those it may still apply: planned by it (this
        runner and token), not speculative, and confirmable or confirmed but not yet applying."""
        organization = self._authz.runner_organization(principal)
        me = runner_ref(principal, runner_id)
        keep = []
        for run_id in dict.fromkeys(run_ids):
            try:
                run = self._store.load(run_id)
            except NotFound:
                continue
            may_apply = run.status in rs.APPLY_AHEAD
            if run.organization == organization and run.plan.runner_id == me and not run.plan_only and may_apply:
                keep.append(run_id)
        return keep
