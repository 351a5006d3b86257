"""Storage of the runs' policy evaluations: an evaluation (`poleval-…`, listed under its task stage,
`<stage>#policy-evaluations`, and pointed at from its run, `<run>#policy-evaluations`), its outcome per policy set
(`psout-…`, listed under `<evaluation>#outcomes`), and each organization's evaluation slots (one item,
`org#<org>#policy-slots`, expiring with its last lease).

The services see an evaluation as a record (its attributes, its id under `id`, without its keys, which only this
module writes) and an outcome as the domain's `PolicySetOutcome`.
"""

from __future__ import annotations

from typing import Any

from terrace.adapters.table import ConditionFailed, Put, Table, WriteOp
from terrace.domain import policy_evaluations as pe
from terrace.domain.policy_evaluations import PolicyEvaluation, PolicySetOutcome

Record = dict[str, Any]
EVALUATION, OUTCOME, SLOTS = "poleval", "psout", "policy-slots"
KEYS = ("pk", "sk", "gsi1pk", "gsi1sk")


def _of_stage(stage_id: str) -> str:
    return f"{stage_id}#policy-evaluations"


def _of_run(run_id: str) -> str:
    return f"{run_id}#policy-evaluations"


def _outcomes(evaluation_id: str) -> str:
    return f"{evaluation_id}#outcomes"


def _slots(organization: str) -> str:
    return f"org#{organization}#policy-slots"


def _record(item: dict[str, Any]) -> Record:
    return {"id": item["pk"], **{k: v for k, v in item.items() if k not in KEYS}}


def _evaluation_item(record: Record) -> dict[str, Any]:
    attributes = {k: v for k, v in record.items() if k != "id"}
    return {"pk": record["id"], "sk": EVALUATION, **attributes, "gsi1pk": _of_stage(record["stage_id"]),
            "gsi1sk": f"{record['created_at']}#{record['id']}"}  # fmt: skip


def evaluation_of(item: Record) -> PolicyEvaluation:
    """An evaluation's record as the domain's entity."""
    return PolicyEvaluation(
        id=item["id"],
        run_id=item["run_id"],
        stage_id=item["stage_id"],
        workspace_id=item["workspace_id"],
        organization=item["organization"],
        status=item["status"],
        result_count=dict(item.get("result_count") or pe.empty_count()),
        status_timestamps=dict(item.get("status_timestamps", {})),
        outcome_ids=tuple(item.get("outcome_ids", [])),
        created_at=item["created_at"],
        updated_at=item["updated_at"],
        overridable=bool(item.get("overridable")),
        queued_epoch=float(item["queued_epoch"]) if item.get("queued_epoch") is not None else None,
    )


def outcome_of(item: dict[str, Any]) -> PolicySetOutcome:
    return PolicySetOutcome(
        id=item["pk"],
        evaluation_id=item["evaluation_id"],
        policy_set_id=item["policy_set_id"],
        policy_set_name=item["policy_set_name"],
        policy_set_description=item.get("policy_set_description", ""),
        overridable=bool(item.get("overridable")),
        outcomes=tuple(item.get("outcomes", [])),
        error=item.get("error", ""),
        result_count=dict(item.get("result_count") or pe.empty_count()),
    )


def outcome_item(outcome: PolicySetOutcome) -> dict[str, Any]:
    return {
        "pk": outcome.id,
        "sk": OUTCOME,
        "evaluation_id": outcome.evaluation_id,
        "policy_set_id": outcome.policy_set_id,
        "policy_set_name": outcome.policy_set_name,
        "policy_set_description": outcome.policy_set_description,
        "overridable": outcome.overridable,
        "outcomes": list(outcome.outcomes),
        "error": outcome.error,
        "result_count": outcome.result_count,
        "gsi1pk": _outcomes(outcome.evaluation_id),
        "gsi1sk": outcome.id,
    }


class EvaluationStore:
    def __init__(self, table: Table) -> None:
        self._table = table

    # evaluations -------------------------------------------------------------------------------
    def evaluation(self, evaluation_id: str) -> Record | None:
        item = self._table.get(evaluation_id, EVALUATION)
        return None if item is None else _record(item)

    def of_stage(self, stage_id: str) -> list[PolicyEvaluation]:
        return [evaluation_of(_record(i)) for i in self._table.query(_of_stage(stage_id), index="gsi1")]

    def of_run(self, run_id: str) -> list[PolicyEvaluation]:
        refs = self._table.query(_of_run(run_id))
        items = [self._table.get(r["sk"], EVALUATION) for r in refs]
        return [evaluation_of(_record(i)) for i in items if i is not None]

    def by_ids(self, evaluation_ids: list[str]) -> list[PolicyEvaluation]:
        keys = [(i, EVALUATION) for i in evaluation_ids]
        return [evaluation_of(_record(i)) for i in self._table.batch_get(keys)]

    def create(self, record: Record) -> bool:
        """The evaluation, then its run's pointer to it; False (nothing written) when it exists already."""
        try:
            self._table.put(_evaluation_item(record), if_absent=True)
        except ConditionFailed:
            return False
        self._table.put({"pk": _of_run(record["run_id"]), "sk": record["id"], "stage_id": record["stage_id"]})
        return True

    def replace(self, record: Record, expected_version: int, *, staged: WriteOp | None = None) -> bool:
        """The evaluation written over `expected_version` (with `staged`, an outbox entry, in the same transaction);
        False when it changed since."""
        item = _evaluation_item(record)
        try:
            if staged is None:
                self._table.put(item, if_version=expected_version)
            else:
                self._table.transact([Put(item, if_version=expected_version), staged])
        except ConditionFailed:
            return False
        return True

    # outcomes ----------------------------------------------------------------------------------
    def outcome(self, outcome_id: str) -> PolicySetOutcome | None:
        item = self._table.get(outcome_id, OUTCOME)
        return None if item is None else outcome_of(item)

    def outcomes_of(self, evaluation_id: str) -> list[PolicySetOutcome]:
        return [outcome_of(i) for i in self._table.query(_outcomes(evaluation_id), index="gsi1")]

    def outcomes(self, outcome_ids: list[str]) -> list[PolicySetOutcome]:
        return [outcome_of(i) for i in self._table.batch_get([(i, OUTCOME) for i in outcome_ids])]

    def put_outcome(self, outcome: PolicySetOutcome) -> None:
        """Unconditional: an outcome's id is derived from its evaluation's and its set's (a repeat writes it again)."""
        self._table.put(outcome_item(outcome))

    # an organization's evaluation slots --------------------------------------------------------
    def slots(self, organization: str) -> Record | None:
        """The organization's slots item's attributes (`leases`, `version`, `expires_at`), None when it has none."""
        item = self._table.get(_slots(organization), SLOTS)
        return None if item is None else {k: v for k, v in item.items() if k not in KEYS}

    def save_slots(self, organization: str, record: Record, expected_version: int | None) -> None:
        """Created when `expected_version` is None, else written over it; ConditionFailed when that lost a race."""
        item = {"pk": _slots(organization), "sk": SLOTS, **record}
        if expected_version is None:
            self._table.put(item, if_absent=True)
        else:
            self._table.put(item, if_version=expected_version)

    # a run's deletion --------------------------------------------------------------------------
    def delete_all_of(self, *, run: str) -> None:
        """A run's evaluations with their outcomes and its pointers to them (`workflows/purge.py`, for each run of a
        workspace being purged; the slots are the organization's and expire on their own)."""
        for pointer in self._table.query(_of_run(run)):
            outcomes = self._table.query(_outcomes(pointer["sk"]), index="gsi1")
            if outcomes:
                self._table.batch_delete([(o["pk"], o["sk"]) for o in outcomes])
            self._table.delete(pointer["sk"], EVALUATION)
            self._table.delete(pointer["pk"], pointer["sk"])
