"""A run's OPA policy evaluations: begun by the task stage (`participant.py`), run as an events-queue job, read
as HCP's `policy-evaluations` and `policy-set-outcomes`.

`begin` records one `pending` evaluation for the stage (with the input it will read: the stored plan JSON's key
and the run's facts) and queues `policy_evaluation.queued`; the events worker (`evaluation_worker.py`) evaluates
each policy set that applies to the workspace, one event per set, stores one outcome per set, concludes
(`domain/policy_evaluations.py`) and publishes `task_stage.progressed`. An evaluation still open
`DEADLINE_S` after it was queued is concluded with its missing sets errored when the stage asks for its verdict
(on each reaper tick), so a lost event or a dead worker never holds a run.
"""

from __future__ import annotations

import builtins
from typing import Any

from terrace.domain import clock
from terrace.domain import policy_evaluations as pe
from terrace.domain.errors import NotFound
from terrace.domain.ids import looks_like
from terrace.domain.policy_evaluations import PolicyEvaluation, PolicySetOutcome
from terrace.domain.principal import Principal
from terrace.services.access.authz import Action
from terrace.services.access.organizations import OrganizationService
from terrace.services.access.projects import ProjectService
from terrace.services.outbox_relay import OutboxRelay
from terrace.services.policies import evaluation_input
from terrace.services.policies.evaluation_worker import QUEUED, EvaluationWorker
from terrace.services.policies.policy_sets import PolicySetService
from terrace.services.policies.store_evaluations import EvaluationStore, evaluation_of
from terrace.services.runs.stage_participants import StageContext
from terrace.services.workspaces.workspaces import WorkspaceService

DEADLINE_S = 600  # an evaluation not concluded 10 minutes after it was queued errors its missing sets


class PolicyEvaluationService:
    def __init__(
        self,
        store: EvaluationStore,
        relay: OutboxRelay,
        organizations: OrganizationService,
        workspaces: WorkspaceService,
        projects: ProjectService,
        policy_sets: PolicySetService,
        worker: EvaluationWorker,
        *,
        deadline_s: float = DEADLINE_S,
    ) -> None:
        self._store, self._relay = store, relay
        self._orgs, self._workspaces, self._projects = organizations, workspaces, projects
        self._sets, self._worker, self._deadline_s = policy_sets, worker, deadline_s

    # the task stage's side -------------------------------------------------------------------------
    def prepare(self, context: StageContext) -> list[str]:
        """At the run's creation: its evaluation, `pending` (HCP lists it, and terraform's `cloud` block waits for
        the stages it sees then)."""
        item = self._record(context)
        return [item["id"]] if item else []

    def begin(self, context: StageContext) -> list[str]:
        """The run reached the stage: its evaluation (recorded now if it was not prepared) is queued, once."""
        item = self._record(context)
        if item is None:
            return []
        if not item.get("queued"):
            version, now = item["version"], clock.now_iso()
            item.update(queued=True, plan_json_key=context.plan_json_key, updated_at=now, version=version + 1)
            item["queued_epoch"] = clock.epoch()
            item["status_timestamps"] = {**item.get("status_timestamps", {}), "queued-at": now}
            entry, staged = self._relay.outbox.stage({"type": QUEUED, "evaluation_id": item["id"]})
            if self._store.replace(item, version, staged=staged):  # the event with its write (outbox)
                self._relay.deliver([entry])  # (else queued by a concurrent call)
        return [item["id"]]

    def _record(self, context: StageContext) -> dict[str, Any] | None:
        """The stage's one evaluation (its id derived from the stage's), written when a policy set applies."""
        evaluation_id = "poleval-" + context.stage_id.removeprefix("ts-")
        found = self._store.evaluation(evaluation_id)
        if found is not None:
            return found
        ws = self._workspaces.load(context.run.workspace_id)
        sets = self._sets.applying_to(ws)
        if not sets:
            return None
        org = self._orgs.by_key(ws.organization)
        project_name = None
        if ws.project_id:
            try:
                project_name = self._projects.load(ws.project_id).name
            except NotFound:
                project_name = None
        now = clock.now_iso()
        item = {
            "id": evaluation_id,
            "run_id": context.run.id,
            "stage_id": context.stage_id,
            "stage": context.stage,
            "workspace_id": ws.id,
            "organization": ws.organization,
            "status": pe.PENDING,
            "queued": False,
            "policy_set_ids": [s.id for s in sets],
            "plan_json_key": context.plan_json_key,
            "run_input": evaluation_input.run_input(context.run, ws, org, project_name),
            "created_at": now,
            "updated_at": now,
            "status_timestamps": {},
            "version": 1,
        }
        if not self._store.create(item):  # (with the run's pointer to it)
            return self._store.evaluation(evaluation_id)
        return item

    def verdict(self, context: StageContext) -> pe.Verdict:
        evaluations = self.of_stage(context.stage_id)
        if any(self._expire(e) for e in evaluations):
            evaluations = self.of_stage(context.stage_id)
        return pe.verdict(evaluations)

    def _expire(self, evaluation: PolicyEvaluation) -> bool:
        """An open evaluation past its deadline is concluded, its missing sets errored (True when it was)."""
        if not evaluation.open or evaluation.queued_epoch is None:
            return False
        if clock.epoch() - evaluation.queued_epoch <= self._deadline_s:
            return False
        self._worker.expire(evaluation.id, f"the policy set was not evaluated within {self._deadline_s:g} s")
        return True

    def overridden(self, context: StageContext) -> None:
        for evaluation in self.of_stage(context.stage_id):
            if evaluation.status == pe.FAILED:
                self._finish(evaluation.id, pe.OVERRIDDEN, None, None)

    def _finish(
        self,
        evaluation_id: str,
        status: str,
        counts: dict[str, int] | None,
        outcome_ids: builtins.list[str] | None,
        overridable: bool | None = None,
    ) -> None:
        for _ in range(8):
            item = self._store.evaluation(evaluation_id)
            if item is None:
                return
            version, now = item["version"], clock.now_iso()
            item.update(status=status, updated_at=now, version=version + 1)
            item["status_timestamps"] = {**item["status_timestamps"], f"{status}-at": now}
            if counts is not None:
                item["result_count"] = counts
            if outcome_ids is not None:
                item["outcome_ids"] = outcome_ids
            if overridable is not None:
                item["overridable"] = overridable
            if self._store.replace(item, version):
                return

    # reads -----------------------------------------------------------------------------------------
    def of_stage(self, stage_id: str) -> builtins.list[PolicyEvaluation]:
        return self._store.of_stage(stage_id)

    def by_ids(self, evaluation_ids: builtins.list[str]) -> builtins.list[PolicyEvaluation]:
        """Evaluations a checked read of their task stage named (`include=policy_evaluations`)."""
        found = self._store.by_ids([i for i in evaluation_ids if looks_like(i, "poleval")])
        return sorted(found, key=lambda e: (e.created_at, e.id))

    def of_run(self, run_id: str) -> builtins.list[PolicyEvaluation]:
        return self._store.of_run(run_id)

    def _readable(self, principal: Principal, evaluation: PolicyEvaluation | None, what: str) -> PolicyEvaluation:
        try:
            if evaluation is not None:
                self._workspaces.get(principal, evaluation.workspace_id, Action.READ_RUNS)
        except NotFound:
            evaluation = None
        if evaluation is None:
            raise NotFound(f"{what} not found")
        return evaluation

    def get(self, principal: Principal, evaluation_id: str) -> PolicyEvaluation:
        item = self._store.evaluation(evaluation_id) if looks_like(evaluation_id, "poleval") else None
        return self._readable(principal, evaluation_of(item) if item else None, f"policy evaluation {evaluation_id}")

    def outcomes(self, principal: Principal, evaluation_id: str) -> builtins.list[PolicySetOutcome]:
        evaluation = self.get(principal, evaluation_id)
        return self._store.outcomes_of(evaluation.id)

    def outcome(self, principal: Principal, outcome_id: str) -> PolicySetOutcome:
        found = self._store.outcome(outcome_id) if looks_like(outcome_id, "psout") else None
        if found is None:
            raise NotFound(f"policy set outcome {outcome_id} not found")
        try:
            self.get(principal, found.evaluation_id)
        except NotFound as exc:
            raise NotFound(f"policy set outcome {outcome_id} not found") from exc
        return found
