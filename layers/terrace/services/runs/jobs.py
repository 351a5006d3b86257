"""The job state machine seen from the runner: next (take + claim), heartbeat, applying, logs, finish.

queued -> claimed/running (heartbeats) -> finished | errored | canceled. A lost attempt is the reaper's
(`job_retries.py`); what a claim hands the runner is built in `job_specs.py`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Collection

from terrace.adapters.blobs import BlobStore
from terrace.adapters.condition_job_signal import ConditionJobSignal
from terrace.adapters.job_queue import JobQueue
from terrace.adapters.job_signal import JobSignal
from terrace.config import Settings
from terrace.domain import agent_pools, clock
from terrace.domain import runs as rs
from terrace.domain.errors import Conflict, NotFound
from terrace.domain.jobs import ClaimRequest, FinishRequest, HeartbeatRequest, HeartbeatResponse, JobSpec
from terrace.domain.masking import Masker
from terrace.domain.organizations import OrgView
from terrace.domain.principal import Principal, PrincipalKind
from terrace.domain.runs import Run, run_id_of
from terrace.domain.task_stages import POST_PLAN
from terrace.services.access.accounts import AccountService, hash_token
from terrace.services.access.authz import Authorizer
from terrace.services.runs.configuration_versions import ConfigurationVersionService
from terrace.services.runs.cost_estimates import CostEstimateService
from terrace.services.runs.job_handoff import ApplyHandoff, runner_ref
from terrace.services.runs.job_liveness import JobLiveness
from terrace.services.runs.job_retries import JobRetries
from terrace.services.runs.job_specs import JobSpecs
from terrace.services.runs.logs import LogService
from terrace.services.runs.plans import PlanService
from terrace.services.runs.runs import RunService
from terrace.services.runs.scheduler import RunScheduler
from terrace.services.runs.store import RunStore, retrying
from terrace.services.runs.workload_identity import WorkloadTokens
from terrace.services.workspaces.agents import AgentService
from terrace.services.workspaces.ssh_keys import SSHKeyService
from terrace.services.workspaces.variables import VariableService
from terrace.services.workspaces.workspaces import WorkspaceService

log = logging.getLogger("terrace.jobs")


def _phase_name(job_id: str) -> str:
    if job_id.startswith("plan-"):
        return "plan"
    if job_id.startswith("apply-"):
        return "apply"
    raise NotFound(f"job {job_id} not found")


class JobService(ApplyHandoff, JobLiveness):
    def __init__(
        self,
        store: RunStore,
        scheduler: RunScheduler,
        runs: RunService,
        workspaces: WorkspaceService,
        cvs: ConfigurationVersionService,
        variables: VariableService,
        accounts: AccountService,
        logs: LogService,
        blobs: BlobStore,
        settings: Settings,
        *,
        queue: JobQueue,
        authz: Authorizer,
        plans: PlanService,
        costs: CostEstimateService,
        ssh_keys: SSHKeyService | None = None,
        signal: JobSignal | None = None,
        agents: AgentService | None = None,
        workload: WorkloadTokens | None = None,
        skip_assessment: Callable[[Run], bool],
        tool_of: Callable[[str], str] = lambda _version: "",
    ) -> None:
        self._queue, self._authz = queue, authz
        self.agents = agents  # the pings of `terrace agent` processes (their status, last ping)
        self._signal = signal or ConditionJobSignal(recheck_s=0.25)  # wakes a waiting `next` (the queue notifies it)
        self._plans, self._costs = plans, costs
        self._store, self._scheduler, self._runs = store, scheduler, runs
        self._variables, self._accounts, self._logs, self._settings = variables, accounts, logs, settings
        self._specs = JobSpecs(workspaces, cvs, variables, blobs, settings, ssh_keys, workload, tool_of)
        self._retries = JobRetries(store, scheduler, logs, settings)  # a job handed back (`release`)
        # an assessment claimed while a run holds its workspace ends unrun (`AssessmentService.skip_if_busy`)
        self.skip_assessment = skip_assessment

    def _load(self, principal: Principal, job_id: str) -> tuple[Run, str]:
        """The job's run, if the runner or agent may work it (another organization's or pool's job, and an agent
        pool's job asked by a runner, are NotFound)."""
        name = _phase_name(job_id)
        try:
            run = self._store.load(run_id_of(job_id))
        except NotFound as exc:
            raise NotFound(f"job {job_id} not found") from exc
        self._authz.require_job(principal, OrgView(run.organization, ()), run.agent_pool_id, f"job {job_id}")
        return run, name

    def _seen(self, principal: Principal, runner_id: str, status: str) -> None:
        """An agent asked for a job or worked one: its ping (an unregistered agent id is refused)."""
        if principal.kind is PrincipalKind.AGENT and self.agents is not None:
            self.agents.seen(principal, runner_id, status)

    # next: take + claim ------------------------------------------------------------------
    def next(
        self,
        principal: Principal,
        runner_id: str,
        wait_s: float = 0.0,
        still_asking: Callable[[], bool] = lambda: True,
        lanes: Collection[str] = (),
    ) -> JobSpec | None:
        """Claim the next job of the runner's organization, waiting up to `wait_s` for one to come.

        A wait sleeps on the job signal (`adapters/job_signal.py`): an enqueue of the organization wakes it at
        once; one table query per look, none while it waits (in one process; on AWS it looks again every
        `recheck_s`). After a wait, a runner no longer `still_asking` (its connection closed: it was stopped or
        killed meanwhile) gets nothing, so no job is claimed for a runner that is gone. `lanes`: only jobs of these
        lanes (a runner on Fargate Spot takes speculative plans only); empty: any."""
        queue = self._authz.job_queue(principal)  # a runner's organization, an agent's pool
        self._seen(principal, runner_id, agent_pools.IDLE)
        deadline = time.monotonic() + max(0.0, wait_s)
        while True:
            mark = self._signal.mark(queue)
            spec = self._take_and_claim(principal, queue, runner_id, lanes)
            remaining = deadline - time.monotonic()
            if spec is not None or remaining <= 0 or not self._signal.wait(queue, mark, remaining):
                if spec is not None:
                    self._seen(principal, runner_id, agent_pools.BUSY)
                return spec
            if not still_asking():
                return None

    def _take_and_claim(
        self, principal: Principal, organization: str, runner_id: str, lanes: Collection[str] = ()
    ) -> JobSpec | None:
        while (queued := self._queue.take(organization, lanes)) is not None:
            try:
                return self.claim(principal, queued.job_id, ClaimRequest(runner_id=runner_id, attempt=queued.attempt))
            except (Conflict, NotFound) as exc:
                log.info("dropping queued job %s attempt %d: %s", queued.job_id, queued.attempt, exc)
            except Exception:
                job = {"job_id": queued.job_id, "run_id": queued.run_id, "phase": queued.phase}
                self._queue.enqueue(organization, queued.lane, {**job, "attempt": queued.attempt})
                raise
        return None

    # claim -------------------------------------------------------------------------------
    def claim(self, principal: Principal, job_id: str, request: ClaimRequest) -> JobSpec:
        def step() -> tuple[Run, str]:
            run, name = self._load(principal, job_id)
            state = run.phase(name)
            expected_status = rs.PLAN_QUEUED if name == "plan" else rs.APPLY_QUEUED
            if run.status != expected_status or state.status != rs.P_QUEUED or state.attempt != request.attempt:
                raise Conflict(
                    f"job {job_id} attempt {request.attempt} is not claimable (run {run.status}, "
                    f"phase {state.status}, attempt {state.attempt})"
                )
            if run.assessment and self.skip_assessment(run):
                raise Conflict(f"job {job_id} is a health assessment and a run holds its workspace: skipped")
            expected, now = run.version, clock.now_iso()
            issued = self._accounts.issue_token(
                PrincipalKind.RUN,
                run.id,
                description=f"run token for {job_id}",
                organization=run.organization,
                workspace_id=run.workspace_id,
                ttl_s=self._settings.run_token_ttl_s,
            )
            run.token_ids.append(issued.token.id)
            run.token_hashes[issued.token.id] = hash_token(issued.secret)
            run.transition(rs.PLANNING if name == "plan" else rs.APPLYING, now)
            state.mark(rs.P_RUNNING, now)
            state.started_at = state.started_at or now
            state.runner_id = runner_ref(principal, request.runner_id)
            state.heartbeat_at = clock.epoch()
            if name == "plan" and (run.query or run.test):  # `terraform query` / `test` leave no plan file
                state.artifact_key = state.json_key = None
            elif name == "plan":  # each attempt uploads to keys of its own: its URLs create them once
                state.artifact_key, state.json_key = self._plans.keys_for_attempt(state)
            else:
                state.artifact_key, state.json_key = run.plan.artifact_key, run.plan.json_key
            try:
                self._store.save([(run, expected)], None, {run.id: expected_status})
            except Exception:
                self._accounts.revoke_token(issued.token.id)
                raise
            return run, issued.secret

        run, secret = retrying(step)
        return self._specs.build(run, _phase_name(job_id), secret, own_runner=principal.kind is not PrincipalKind.AGENT)

    # applying ----------------------------------------------------------------------------
    def start_apply(self, principal: Principal, job_id: str, request: HeartbeatRequest) -> HeartbeatResponse:
        """The runner is about to start terraform apply: from now on a lost attempt is never retried.

        Idempotent for the runner that holds the job (its retried call gets the same answer). A cancel asked
        before this point answers `cancel` and records nothing: the runner then does not apply."""

        def step() -> HeartbeatResponse:
            run, name = self._load(principal, job_id)
            state = run.phase(name)
            if name != "apply":
                raise Conflict(f"job {job_id} is not an apply")
            if run.final or state.status != rs.P_RUNNING or state.runner_id != runner_ref(principal, request.runner_id):
                raise Conflict(f"job {job_id} is not running on {request.runner_id}")
            if run.cancel_requested_at is not None:
                return HeartbeatResponse(cancel=True, force_cancel=run.force_cancel_requested)
            if state.apply_started_at is None:
                expected = run.version
                state.apply_started_at = clock.now_iso()
                state.heartbeat_at = clock.epoch()
                self._store.save([(run, expected)], None, {run.id: run.status})
            return HeartbeatResponse()

        return retrying(step)

    # finish ------------------------------------------------------------------------------
    def finish(self, principal: Principal, job_id: str, request: FinishRequest) -> Run:
        def step() -> Run:
            run, name = self._load(principal, job_id)
            state = run.phase(name)
            if run.final:
                return run  # force-canceled or reaped meanwhile: nothing left to record
            if state.status != rs.P_RUNNING or state.runner_id != runner_ref(principal, request.runner_id):
                raise Conflict(f"job {job_id} is not running on {request.runner_id}")
            expected, now = run.version, clock.now_iso()
            run.revoking_tokens = True  # the phase is over: its token stops working with this write
            status, error = request.status, request.error_message
            if status == "finished" and run.cancel_requested_at is not None and name == "plan":
                status = "canceled"
            if name == "plan" and status == "finished":
                try:
                    self._plans.record(run, request)
                except Conflict as exc:
                    status, error = "errored", exc.detail
            state.mark({"finished": rs.P_FINISHED, "errored": rs.P_ERRORED, "canceled": rs.P_CANCELED}[status], now)
            state.finished_at = now
            if name == "plan":
                state.has_changes = request.has_changes
                if request.declared_actions is not None:  # the actions read API's (`terraform_actions.py`)
                    run.declared_actions = [a.model_dump() for a in request.declared_actions]
                run.action_invocations = [i.model_dump() for i in request.action_invocations]
                if request.installed_modules is not None:  # the explorer's (`workflows/explorer_feed.py`)
                    run.installed_modules = [m.model_dump() for m in request.installed_modules]
                if run.test and request.test_summary is not None:  # `domain/module_tests.py`
                    run.test_result = request.test_summary.model_dump()
            state.additions, state.changes = request.resource_additions, request.resource_changes
            state.destructions, state.imports = request.resource_destructions, request.resource_imports
            self._logs.archive(state.id)
            state.log_archived = True
            if status == "errored":
                detail = error or f"the {name} failed; see its log"
                detail = Masker(self._variables.sensitive_values_of(run).values).mask_text(detail)
                return self._scheduler.finish(run, expected, rs.ERRORED, detail)
            if status == "canceled":
                return self._scheduler.finish(run, expected, rs.CANCELED)
            if name == "apply":
                return self._scheduler.finish(run, expected, rs.APPLIED)
            return self._after_plan(run, expected)

        run = retrying(step)
        self._scheduler.revoke_tokens(run)  # tokens of runs claimed before their hashes were recorded
        self._logs.purge(job_id)
        return run

    def _after_plan(self, run: Run, expected: int) -> Run:
        self._costs.estimate(run)
        previous, now = {run.id: run.status}, clock.now_iso()
        outcome = run.after_plan(now, estimated=run.cost_estimate is not None)
        if self._scheduler.hold(run, POST_PLAN, now):  # its post-plan task stage decides where it goes
            self._store.save([(run, expected)], None, previous)
            return run
        if outcome == rs.PLANNED_AND_FINISHED:
            return self._scheduler.finish(run, expected, outcome)
        if outcome == rs.CONFIRMED:
            return self._runs.confirm(run, expected)
        if outcome != run.status:
            run.transition(outcome, now)
        self._store.save([(run, expected)], None, previous)
        return run
