"""The run aggregate and its state machine (statuses and actions follow HCP Terraform)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from terrace.domain.cost_estimation import CostEstimate
from terrace.domain.errors import Conflict

PENDING = "pending"
PLAN_QUEUED = "plan_queued"
PLANNING = "planning"
PLANNED = "planned"
COST_ESTIMATING = "cost_estimating"
COST_ESTIMATED = "cost_estimated"
CONFIRMED = "confirmed"
APPLY_QUEUED = "apply_queued"
APPLYING = "applying"
APPLIED = "applied"
PLANNED_AND_FINISHED = "planned_and_finished"
PLANNED_AND_SAVED = "planned_and_saved"
DISCARDED = "discarded"
ERRORED = "errored"
CANCELED = "canceled"
FORCE_CANCELED = "force_canceled"
# Task stages (HCP Terraform's run tasks and policy evaluations; `domain/task_stages.py`): the run waits in
# `<stage>_running` while the features taking part decide, then passes `<stage>_completed`.
PRE_PLAN_RUNNING = "pre_plan_running"
PRE_PLAN_COMPLETED = "pre_plan_completed"
POST_PLAN_RUNNING = "post_plan_running"
POST_PLAN_COMPLETED = "post_plan_completed"
POST_PLAN_AWAITING_DECISION = "post_plan_awaiting_decision"  # a failure an override may pass ("needs attention")
PRE_APPLY_RUNNING = "pre_apply_running"
PRE_APPLY_COMPLETED = "pre_apply_completed"
STAGE_RUNNING = {"pre_plan": PRE_PLAN_RUNNING, "post_plan": POST_PLAN_RUNNING, "pre_apply": PRE_APPLY_RUNNING}
STAGE_COMPLETED = {"pre_plan": PRE_PLAN_COMPLETED, "post_plan": POST_PLAN_COMPLETED, "pre_apply": PRE_APPLY_COMPLETED}

FINAL = frozenset({APPLIED, PLANNED_AND_FINISHED, DISCARDED, ERRORED, CANCELED, FORCE_CANCELED})
AWAITING_CONFIRMATION = frozenset({PLANNED, COST_ESTIMATED, PLANNED_AND_SAVED, POST_PLAN_COMPLETED})
QUEUED = frozenset({PLAN_QUEUED, APPLY_QUEUED})
RUNNING = frozenset({PLANNING, APPLYING})
# A task stage underway: no runner works the run, the features taking part decide (`services/runs/task_stages.py`).
IN_STAGE = frozenset(STAGE_RUNNING.values()) | {PRE_PLAN_COMPLETED, PRE_APPLY_COMPLETED}
STAGE_WAITING = IN_STAGE | {POST_PLAN_AWAITING_DECISION}  # the next phase waits on a task stage
# Runs that sit in the organization's run queue (queued for or holding a runner).
ACTIVE = QUEUED | RUNNING | frozenset({CONFIRMED})
CANCELABLE = frozenset({PENDING, PLAN_QUEUED, PLANNING, APPLY_QUEUED, APPLYING}) | IN_STAGE
DISCARDABLE = AWAITING_CONFIRMATION | {PENDING, POST_PLAN_AWAITING_DECISION}
# A planned run whose apply may still come (the runner that planned it keeps its folder for it).
APPLY_AHEAD = AWAITING_CONFIRMATION | {
    CONFIRMED,
    APPLY_QUEUED,
    POST_PLAN_RUNNING,
    POST_PLAN_AWAITING_DECISION,
    PRE_APPLY_RUNNING,
    PRE_APPLY_COMPLETED,
}

# Phase (plan/apply) statuses
P_PENDING, P_QUEUED, P_RUNNING = "pending", "queued", "running"
P_FINISHED, P_ERRORED, P_CANCELED, P_UNREACHABLE = "finished", "errored", "canceled", "unreachable"
PHASE_FINAL = frozenset({P_FINISHED, P_ERRORED, P_CANCELED, P_UNREACHABLE})


def suffix(identifier: str) -> str:
    return identifier.split("-", 1)[1]


def run_id_of(phase_id: str) -> str:
    """plan-X and apply-X belong to run-X (TFC's id aliasing)."""
    return "run-" + suffix(phase_id)


@dataclass
class PhaseState:
    id: str
    status: str = P_PENDING
    attempt: int = 0
    runner_id: str | None = None
    queued_at: str | None = None
    started_at: str | None = None
    heartbeat_at: float | None = None
    finished_at: str | None = None
    has_changes: bool = False
    additions: int = 0
    changes: int = 0
    destructions: int = 0
    imports: int = 0
    log_archived: bool = False
    artifact_key: str | None = None  # plan file blob
    json_key: str | None = None  # plan JSON blob
    artifact_md5: str | None = None  # the plan file's MD5 and size, recorded when the plan finished
    artifact_size: int | None = None
    json_md5: str | None = None  # the stored plan JSON's (after the API hid secrets in it)
    json_size: int | None = None
    # Hold Your Own Key: the encrypted data key (`hyok-encrypted-data-key`) of the sealed plan file
    hyok_data_key_id: str | None = None
    apply_started_at: str | None = None  # apply phase: terraform apply was about to start (never retried after)
    timestamps: dict[str, str] = field(default_factory=dict)

    def mark(self, status: str, at: str) -> None:
        self.status = status
        self.timestamps[f"{status}-at"] = at

    @property
    def final(self) -> bool:
        return self.status in PHASE_FINAL


@dataclass
class Run:
    id: str
    organization: str
    workspace_id: str
    configuration_version_id: str
    created_at: str
    created_by: str
    version: int = 1
    status: str = PENDING
    message: str = ""
    source: str = "tfe-api"
    is_destroy: bool = False
    refresh: bool = True
    refresh_only: bool = False
    target_addrs: list[str] = field(default_factory=list)
    replace_addrs: list[str] = field(default_factory=list)
    # the actions `terraform plan -invoke=<addr>` invokes (terraform 1.14+; HCP's `invoke-action-addrs`)
    invoke_action_addrs: list[str] = field(default_factory=list)
    auto_apply: bool = False
    plan_only: bool = False
    save_plan: bool = False
    allow_empty_apply: bool = False
    terraform_version: str = "latest"
    tool: str = ""  # the tool of the exact version the run resolved to; "": recorded before runs had one
    variables: list[dict[str, str]] = field(default_factory=list)
    # The variables the run resolved when it was created, after precedence, each with its source (a variable set,
    # the workspace, the run) and its value, a sensitive one only as the ciphertext it was stored with and that
    # ciphertext's encryption context (`services/workspaces/effective_variables.py`). None: created before runs
    # recorded them (the workspace's current variables are used).
    resolved_variables: list[dict[str, Any]] | None = None
    cancel_requested_at: float | None = None
    force_cancel_requested: bool = False
    error_message: str | None = None
    status_timestamps: dict[str, str] = field(default_factory=dict)
    plan: PhaseState = field(default_factory=lambda: PhaseState(id=""))
    apply: PhaseState = field(default_factory=lambda: PhaseState(id=""))
    queued_at: str | None = None  # when it entered the organization queue
    token_ids: list[str] = field(default_factory=list)  # run tokens to revoke when the run ends
    token_hashes: dict[str, str] = field(default_factory=dict)  # their lookups' hashes: revoked without a read
    cost_estimate: CostEstimate | None = None  # when its organization estimates costs (from creation on)
    comment_ids: list[str] = field(default_factory=list)
    task_stage_ids: list[str] = field(default_factory=list)  # its task stages, in stage order
    confirmed_by: str | None = None
    # what queued it when a run trigger did (`domain/run_triggers.py: Origin.to_dict`); None otherwise
    trigger: dict[str, Any] | None = None
    # the forge's commit it plans (`domain/vcs_events.py: run_summary` of its configuration version's ingress
    # attributes); None for an uploaded configuration
    vcs: dict[str, Any] | None = None
    # the agent pool whose agents execute it (its workspace's execution mode was `agent` when it was created);
    # None: Terrace's own runners execute it
    agent_pool_id: str | None = None
    # a health assessment (`domain/assessments.py`): listed with the workspace's assessments, never its runs
    assessment: bool = False
    # a query run (`domain/query_runs.py`: `terraform query`, terraform 1.14+): listed with the workspace's query
    # runs, never its runs; `generate_config_out`: its query also writes configuration for what it found
    query: bool = False
    generate_config_out: bool = False
    # a registry module's test run (`domain/module_tests.py`: `terraform test`): a run of the module's test
    # workspace, listed with its test runs only; `test_options` what the CLI asked (filters, test directory,
    # verbose, parallelism), `test_result` the summary the runner reported (None: none yet)
    test: bool = False
    test_options: dict[str, Any] = field(default_factory=dict)
    test_result: dict[str, Any] | None = None
    # what its finished plan's JSON said of actions (`domain/terraform_actions.py`, as dicts): the actions the
    # configuration declares (None: not known) and the invocations the plan planned, per action
    declared_actions: list[dict[str, Any]] | None = None
    action_invocations: list[dict[str, Any]] = field(default_factory=list)
    # the module versions its plan's `terraform init` installed (`domain/installed_modules.py`, as dicts: key,
    # source, version), as its runner reported them; None: not reported
    installed_modules: list[dict[str, Any]] | None = None
    # Statuses passed since the run was loaded (each becomes a run event when saved); never stored.
    trail: list[str] = field(default_factory=list)
    # Its tokens are revoked by its next write, in the same transaction (`RunStore.save`); never stored.
    revoking_tokens: bool = False

    @property
    def final(self) -> bool:
        return self.status in FINAL

    @property
    def speculative(self) -> bool:
        return self.plan_only

    @property
    def has_changes(self) -> bool:
        return self.plan.has_changes

    def phase(self, name: str) -> PhaseState:
        return self.plan if name == "plan" else self.apply

    def transition(self, status: str, at: str) -> None:
        self.status = status
        self.status_timestamps[f"{status.replace('_', '-')}-at"] = at
        self.trail.append(status)

    def after_plan(self, at: str, *, estimated: bool) -> str:
        """Record the statuses a finished plan passes through (planned; then cost_estimating and
        cost_estimated when its costs were estimated) and return where the run goes next:
        planned_and_finished (speculative, or nothing to apply), planned_and_saved (save-plan),
        confirmed (auto-apply) or its current status (it awaits confirmation)."""
        self.transition(PLANNED, at)
        if estimated:
            self.transition(COST_ESTIMATING, at)
            self.transition(COST_ESTIMATED, at)
        return self.continuation()

    def continuation(self) -> str:
        """Where a planned run goes (after its post-plan task stage, if it has one): see `after_plan`."""
        if self.plan_only or (not self.has_changes and not self.allow_empty_apply):
            return PLANNED_AND_FINISHED
        if self.save_plan:
            return PLANNED_AND_SAVED
        if self.auto_apply:
            return CONFIRMED
        return self.status

    def require(self, *statuses: str, action: str) -> None:
        if self.status not in statuses:
            raise Conflict(f"run {self.id} is {self.status}; cannot {action}")

    def actions(self, cooloff_s: float, now: float) -> dict[str, bool]:
        return {
            "is-cancelable": self.status in CANCELABLE,
            "is-confirmable": self.status in AWAITING_CONFIRMATION and not self.plan_only,
            "is-discardable": self.status in DISCARDABLE,
            "is-force-cancelable": self.status in CANCELABLE
            and self.cancel_requested_at is not None
            and now - self.cancel_requested_at >= cooloff_s,
        }


def current_of(current: Run | None, latest: Run | None) -> Run | None:
    """The run a workspace's status is (its list row, its overview): its current run (the head of its queue)
    while that run is underway, as it is what the workspace waits on; else its latest run."""
    if current is not None and not current.final:
        return current
    return latest or current
