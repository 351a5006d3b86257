"""A run's OPA policy evaluations: begun by the task stage (`participant.py`), run as an events-queue job, read
as HCP's `policy-evaluations` and `policy-set-outcomes`.

`begin` records one `pending` evaluation for the stage (with the input it will read: the stored plan JSON's key
and the run's facts) and queues `policy_evaluation.queued`; the events worker's `run` evaluates each policy set
that applies to the workspace with the policy engine (a child process bounded in time and memory), stores one
outcome per set, concludes (`domain/policy_evaluations.py`) and publishes `task_stage.progressed`.
"""

from __future__ import annotations

import builtins
import json
from typing import Any

from terrace.adapters.blobs import BlobStore
from terrace.adapters.events import EventPublisher
from terrace.adapters.policy_engine import PolicyEngine
from terrace.adapters.table import ConditionFailed, Table
from terrace.domain import clock
from terrace.domain import policy_evaluations as pe
from terrace.domain.errors import NotFound
from terrace.domain.ids import looks_like, new_id
from terrace.domain.policies import PolicySet
from terrace.domain.policy_evaluations import PolicyEvaluation, PolicySetOutcome
from terrace.domain.principal import Principal
from terrace.services.access.authz import Action
from terrace.services.access.organizations import OrganizationService
from terrace.services.access.projects import ProjectService
from terrace.services.policies import evaluation_input
from terrace.services.policies.evaluation_items import evaluation_of, outcome_item, outcome_of
from terrace.services.policies.parameters import PolicySetParameterService
from terrace.services.policies.policy_sets import PolicySetService
from terrace.services.policies.versions import PolicySetVersionService
from terrace.services.runs.stage_participants import StageContext, stage_progressed
from terrace.services.workspaces.workspaces import WorkspaceService

QUEUED = "policy_evaluation.queued"
EVAL_KEY, OUTCOME_KEY = "poleval", "psout"
PLAN_MAX_BYTES = 32 * 1024 * 1024  # a plan JSON larger than this errors the evaluation


class PolicyEvaluationService:
    def __init__(
        self,
        table: Table,
        blobs: BlobStore,
        publisher: EventPublisher,
        organizations: OrganizationService,
        workspaces: WorkspaceService,
        projects: ProjectService,
        policy_sets: PolicySetService,
        versions: PolicySetVersionService,
        parameters: PolicySetParameterService,
        engine: PolicyEngine,
    ) -> None:
        self._table, self._blobs, self._publisher = table, blobs, publisher
        self._orgs, self._workspaces, self._projects = organizations, workspaces, projects
        self._sets, self._versions, self._parameters, self._engine = policy_sets, versions, parameters, engine

    # the task stage's side -------------------------------------------------------------------------
    def prepare(self, context: StageContext) -> list[str]:
        """At the run's creation: its evaluation, `pending` (HCP lists it, and terraform's `cloud` block waits for
        the stages it sees then)."""
        item = self._record(context)
        return [item["pk"]] if item else []

    def begin(self, context: StageContext) -> list[str]:
        """The run reached the stage: its evaluation (recorded now if it was not prepared) is queued, once."""
        item = self._record(context)
        if item is None:
            return []
        if not item.get("queued"):
            version, now = item["version"], clock.now_iso()
            item.update(queued=True, plan_json_key=context.plan_json_key, updated_at=now, version=version + 1)
            item["status_timestamps"] = {**item.get("status_timestamps", {}), "queued-at": now}
            try:
                self._table.put(item, if_version=version)
                self._publisher.publish({"type": QUEUED, "evaluation_id": item["pk"]})
            except ConditionFailed:
                pass  # queued by a concurrent call
        return [item["pk"]]

    def _record(self, context: StageContext) -> dict[str, Any] | None:
        """The stage's one evaluation (its id derived from the stage's), written when a policy set applies."""
        evaluation_id = "poleval-" + context.stage_id.removeprefix("ts-")
        found = self._table.get(evaluation_id, EVAL_KEY)
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
            "pk": evaluation_id,
            "sk": EVAL_KEY,
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
            "gsi1pk": f"{context.stage_id}#policy-evaluations",
            "gsi1sk": f"{now}#{evaluation_id}",
        }
        try:
            self._table.put(item, if_absent=True)
        except ConditionFailed:
            return self._table.get(evaluation_id, EVAL_KEY)
        self._table.put(
            {"pk": f"{context.run.id}#policy-evaluations", "sk": evaluation_id, "stage_id": context.stage_id}
        )
        return item

    def verdict(self, context: StageContext) -> pe.Verdict:
        return pe.verdict(self.of_stage(context.stage_id))

    def overridden(self, context: StageContext) -> None:
        for evaluation in self.of_stage(context.stage_id):
            if evaluation.status == pe.FAILED:
                self._finish(evaluation.id, pe.OVERRIDDEN, None, None)

    # the events worker's job ------------------------------------------------------------------------
    def run(self, event: dict[str, Any]) -> None:
        evaluation_id = str(event.get("evaluation_id", ""))
        item = self._table.get(evaluation_id, EVAL_KEY) if looks_like(evaluation_id, "poleval") else None
        if item is None or item["status"] != pe.PENDING or not item.get("queued"):
            return  # unknown, or already taken by an earlier delivery
        version, now = item["version"], clock.now_iso()
        item.update(status=pe.RUNNING, updated_at=now, version=version + 1)
        item["status_timestamps"] = {**item["status_timestamps"], "running-at": now}
        try:
            self._table.put(item, if_version=version)
        except ConditionFailed:
            return
        plan, plan_error = self._plan(item.get("plan_json_key"))
        outcomes = []
        for set_id in item["policy_set_ids"]:
            ps = self._sets.load(set_id)
            if ps is None:
                continue
            outcome = self._evaluate_set(evaluation_id, ps, plan, plan_error, item["run_input"])
            self._table.put({**outcome_item(outcome), "pk": outcome.id, "sk": OUTCOME_KEY})
            outcomes.append(outcome)
        status, counts, overridable = pe.conclude(outcomes)
        self._finish(evaluation_id, status, counts, [o.id for o in outcomes], overridable)
        self._publisher.publish(stage_progressed(item["stage_id"], item["run_id"]))

    def _plan(self, key: str | None) -> tuple[Any, str | None]:
        if not key:
            return None, None
        info = self._blobs.head(key)
        if info is None:
            return None, "the run's JSON plan is missing"
        if info.size > PLAN_MAX_BYTES:
            return None, f"the run's JSON plan is larger than {PLAN_MAX_BYTES} bytes"
        return json.loads(self._blobs.get(key)), None

    def _evaluate_set(
        self, evaluation_id: str, ps: PolicySet, plan: Any, plan_error: str | None, run: dict[str, Any]
    ) -> PolicySetOutcome:
        bundle = self._versions.bundle_of(ps)
        error = plan_error
        results: dict[str, pe.QueryResult] = {}
        if error is None and bundle.policies:
            doc = evaluation_input.document(plan, run, self._parameters.values(ps.id))
            answer = self._engine.evaluate(bundle.modules, [p.query for p in bundle.policies], doc, bundle.data)
            error = answer.error
            results = {r.query: r for r in answer.results}
        outcomes = [pe.policy_outcome(p, results.get(p.query), error) for p in bundle.policies]
        return PolicySetOutcome(
            id=new_id("psout"),
            evaluation_id=evaluation_id,
            policy_set_id=ps.id,
            policy_set_name=ps.name,
            policy_set_description=ps.description,
            overridable=ps.overridable,
            outcomes=tuple(outcomes),
            error=error or "",
            result_count=pe.count(outcomes),
        )

    def _finish(
        self,
        evaluation_id: str,
        status: str,
        counts: dict[str, int] | None,
        outcome_ids: builtins.list[str] | None,
        overridable: bool | None = None,
    ) -> None:
        for _ in range(8):
            item = self._table.get(evaluation_id, EVAL_KEY)
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
            try:
                self._table.put(item, if_version=version)
                return
            except ConditionFailed:
                continue

    # reads -----------------------------------------------------------------------------------------
    def of_stage(self, stage_id: str) -> builtins.list[PolicyEvaluation]:
        return [evaluation_of(i) for i in self._table.query(f"{stage_id}#policy-evaluations", index="gsi1")]

    def by_ids(self, evaluation_ids: builtins.list[str]) -> builtins.list[PolicyEvaluation]:
        """Evaluations a checked read of their task stage named (`include=policy_evaluations`)."""
        items = self._table.batch_get([(i, EVAL_KEY) for i in evaluation_ids if looks_like(i, "poleval")])
        return sorted((evaluation_of(i) for i in items), key=lambda e: (e.created_at, e.id))

    def of_run(self, run_id: str) -> builtins.list[PolicyEvaluation]:
        refs = self._table.query(f"{run_id}#policy-evaluations")
        items = [self._table.get(r["sk"], EVAL_KEY) for r in refs]
        return [evaluation_of(i) for i in items if i is not None]

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
        item = self._table.get(evaluation_id, EVAL_KEY) if looks_like(evaluation_id, "poleval") else None
        return self._readable(principal, evaluation_of(item) if item else None, f"policy evaluation {evaluation_id}")

    def outcomes(self, principal: Principal, evaluation_id: str) -> builtins.list[PolicySetOutcome]:
        evaluation = self.get(principal, evaluation_id)
        items = self._table.query(f"{evaluation.id}#outcomes", index="gsi1")
        return [outcome_of(i) for i in items]

    def outcome(self, principal: Principal, outcome_id: str) -> PolicySetOutcome:
        item = self._table.get(outcome_id, OUTCOME_KEY) if looks_like(outcome_id, "psout") else None
        if item is None:
            raise NotFound(f"policy set outcome {outcome_id} not found")
        try:
            self.get(principal, item["evaluation_id"])
        except NotFound as exc:
            raise NotFound(f"policy set outcome {outcome_id} not found") from exc
        return outcome_of(item)
