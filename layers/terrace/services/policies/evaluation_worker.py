"""The events worker's part of a run's OPA policy evaluation: one policy set per event, so that one invocation of the
events function (30 s on AWS) evaluates one set at a time, each bounded by the engine's limits.

1. `queued` (`policy_evaluation.queued`, published by `PolicyEvaluationService.begin`): the evaluation starts
   (`running`) and one `policy_evaluation.set_queued` event per policy set is published. Each carries `needs_ms`, the
   time its evaluation may take (the engine's wall-clock limit and the reads and writes around it): the events
   function puts an event back on the queue rather than start it with less time left (`functions/events/handler.py`).
2. `run_set`: takes one of its organization's evaluation slots (`evaluation_slots.py`; when they are all held the
   event is put back with a delay of DEFER_S, so an organization's slow sets never hold more than its slots' worth
   of event handlers), evaluates one set with the policy engine (a child process bounded in time and memory, or the
   policy function on AWS), stores its
   outcome under an id derived from the evaluation's and the set's place in it (a delivery repeated stores the same
   one), then records the set as done on the evaluation (a conditional write; racing sets re-read). The write that
   completes the evaluation concludes it (`domain/policy_evaluations.py: conclude`) and publishes
   `task_stage.progressed`.
3. `expire`: an evaluation still open past its deadline (a lost event, a worker that died) has each set not done
   recorded as errored, so its stage is decided and its run never waits forever.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from terrace.adapters.blobs import BlobStore
from terrace.adapters.events import EventPublisher
from terrace.adapters.policy_engine import PolicyEngine
from terrace.domain import clock
from terrace.domain import policy_evaluations as pe
from terrace.domain.ids import looks_like
from terrace.domain.policies import PolicySet
from terrace.domain.policy_evaluations import PolicySetOutcome
from terrace.services.policies import evaluation_input
from terrace.services.policies.evaluation_slots import EvaluationSlots
from terrace.services.policies.parameters import PolicySetParameterService
from terrace.services.policies.policy_sets import PolicySetService
from terrace.services.policies.store_evaluations import EvaluationStore
from terrace.services.policies.versions import PolicySetVersionService
from terrace.services.runs.stage_participants import stage_progressed

QUEUED = "policy_evaluation.queued"
SET_QUEUED = "policy_evaluation.set_queued"
PLAN_MAX_BYTES = 32 * 1024 * 1024  # a plan JSON larger than this errors the evaluation
AROUND_MS = 3000  # a set's reads and writes around its engine call, and the child process's start
DEFER_S = 2  # a set whose organization's slots are all held is tried again this much later
SLOT_MARGIN_S = 30  # a slot outlives its set's budget this long before it expires on its own (a worker that died)


def outcome_id(evaluation_id: str, index: int) -> str:
    return f"psout-{evaluation_id.removeprefix('poleval-')}-{index:03d}"


class EvaluationWorker:
    def __init__(
        self,
        store: EvaluationStore,
        blobs: BlobStore,
        publisher: EventPublisher,
        policy_sets: PolicySetService,
        versions: PolicySetVersionService,
        parameters: PolicySetParameterService,
        engine: PolicyEngine,
        *,
        engine_timeout_s: float,
        per_organization: int,
        publish_later: Callable[[dict[str, Any], int], None],
        defer_s: int = DEFER_S,
    ) -> None:
        """`per_organization`: the sets of one organization evaluated at once; `publish_later(event, delay_s)` puts a
        deferred set's event back on the events queue."""
        self._evaluation_store, self._blobs, self._publisher = store, blobs, publisher
        self._sets, self._versions, self._parameters, self._engine = policy_sets, versions, parameters, engine
        self.set_needs_ms = int(engine_timeout_s * 1000) + AROUND_MS
        self.slots = EvaluationSlots(store, per_organization, self.set_needs_ms / 1000 + SLOT_MARGIN_S)
        self._publish_later, self._defer_s = publish_later, defer_s

    def _load(self, evaluation_id: str) -> dict[str, Any] | None:
        return self._evaluation_store.evaluation(evaluation_id) if looks_like(evaluation_id, "poleval") else None

    # 1. the evaluation starts ---------------------------------------------------------------------
    def queued(self, event: dict[str, Any]) -> None:
        evaluation_id = str(event.get("evaluation_id", ""))
        item = self._load(evaluation_id)
        if item is None or item["status"] != pe.PENDING or not item.get("queued"):
            return  # unknown, or already started by an earlier delivery
        version, now = item["version"], clock.now_iso()
        item.update(status=pe.RUNNING, updated_at=now, version=version + 1)
        item["status_timestamps"] = {**item["status_timestamps"], "running-at": now}
        if not self._evaluation_store.replace(item, version):
            return
        for index, set_id in enumerate(item["policy_set_ids"]):
            self._publisher.publish(
                {
                    "type": SET_QUEUED,
                    "evaluation_id": evaluation_id,
                    "policy_set_id": set_id,
                    "index": index,
                    "needs_ms": self.set_needs_ms,
                }
            )

    # 2. one policy set ----------------------------------------------------------------------------
    def run_set(self, event: dict[str, Any]) -> None:
        evaluation_id, set_id = str(event.get("evaluation_id", "")), str(event.get("policy_set_id", ""))
        item = self._load(evaluation_id)
        if item is None or item["status"] not in pe.OPEN or set_id not in item["policy_set_ids"]:
            return
        if set_id in (item.get("done_sets") or {}):
            return  # a repeated delivery
        index = item["policy_set_ids"].index(set_id)
        organization, lease = str(item["organization"]), outcome_id(evaluation_id, index)
        if not self.slots.acquire(organization, lease):
            deferred = int(event.get("deferred") or 0) + 1
            self._publish_later({**event, "deferred": deferred}, self._defer_s)
            return
        try:
            ps = self._sets.load(set_id)
            outcome = None
            if ps is not None:  # a set deleted since the run began is left out
                plan, plan_error = self._plan(item.get("plan_json_key"))
                outcome = self._evaluate(lease, evaluation_id, ps, plan, plan_error, item)
                self._store(outcome)
            self._done(evaluation_id, {set_id: outcome.id if outcome else ""})
        finally:
            self.slots.release(organization, lease)

    def _plan(self, key: str | None) -> tuple[Any, str | None]:
        if not key:
            return None, None
        info = self._blobs.head(key)
        if info is None:
            return None, "the run's JSON plan is missing"
        if info.size > PLAN_MAX_BYTES:
            return None, f"the run's JSON plan is larger than {PLAN_MAX_BYTES} bytes"
        return json.loads(self._blobs.get(key)), None

    def _evaluate(
        self, id_: str, evaluation_id: str, ps: PolicySet, plan: Any, error: str | None, item: dict[str, Any]
    ) -> PolicySetOutcome:
        bundle = self._versions.bundle_of(ps)
        results: dict[str, pe.QueryResult] = {}
        if error is None and bundle.policies:
            doc = evaluation_input.document(plan, item["run_input"], self._parameters.values(ps.id))
            answer = self._engine.evaluate(bundle.modules, [p.query for p in bundle.policies], doc, bundle.data)
            error = answer.error
            results = {r.query: r for r in answer.results}
        outcomes = [pe.policy_outcome(p, results.get(p.query), error) for p in bundle.policies]
        return self._outcome(id_, evaluation_id, ps, outcomes, error)

    @staticmethod
    def _outcome(
        id_: str, evaluation_id: str, ps: PolicySet, outcomes: list[dict[str, Any]], error: str | None
    ) -> PolicySetOutcome:
        return PolicySetOutcome(
            id=id_,
            evaluation_id=evaluation_id,
            policy_set_id=ps.id,
            policy_set_name=ps.name,
            policy_set_description=ps.description,
            overridable=ps.overridable,
            outcomes=tuple(outcomes),
            error=error or "",
            result_count=pe.count(outcomes),
        )

    def _store(self, outcome: PolicySetOutcome) -> None:
        self._evaluation_store.put_outcome(outcome)

    def _done(self, evaluation_id: str, done: dict[str, str]) -> None:
        """Record sets as done (set id -> its outcome id, "" for none); the write that completes the evaluation
        concludes it and tells the stage."""
        for _ in range(16):
            item = self._load(evaluation_id)
            if item is None or item["status"] not in pe.OPEN:
                return
            recorded = dict(item.get("done_sets") or {})
            new = {k: v for k, v in done.items() if k not in recorded}
            if not new:
                return
            recorded.update(new)
            version, now = item["version"], clock.now_iso()
            item.update(done_sets=recorded, updated_at=now, version=version + 1)
            complete = all(s in recorded for s in item["policy_set_ids"])
            if complete:
                ids = [recorded[s] for s in item["policy_set_ids"] if recorded[s]]
                outcomes = self._evaluation_store.outcomes(ids)
                status, counts, overridable = pe.conclude(outcomes)
                item.update(status=status, result_count=counts, outcome_ids=ids, overridable=overridable)
                item["status_timestamps"] = {**item["status_timestamps"], f"{status}-at": now}
            if not self._evaluation_store.replace(item, version):
                continue
            if complete:
                self._publisher.publish(stage_progressed(item["stage_id"], item["run_id"]))
            return

    # 3. past the deadline ---------------------------------------------------------------------------
    def expire(self, evaluation_id: str, message: str) -> None:
        """Each set of an open evaluation not done yet is recorded as errored with `message`."""
        item = self._load(evaluation_id)
        if item is None or item["status"] not in pe.OPEN:
            return
        recorded = item.get("done_sets") or {}
        done: dict[str, str] = {}
        for index, set_id in enumerate(item["policy_set_ids"]):
            if set_id in recorded:
                continue
            ps = self._sets.load(set_id)
            if ps is None:
                done[set_id] = ""
                continue
            policies = self._versions.bundle_of(ps).policies
            outcome = self._outcome(
                outcome_id(evaluation_id, index),
                evaluation_id,
                ps,
                [pe.policy_outcome(p, None, message) for p in policies],
                message,
            )
            self._store(outcome)
            done[set_id] = outcome.id
        self._done(evaluation_id, done)
