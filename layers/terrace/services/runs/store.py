"""Persistence of runs: every transition is one conditional transaction that also keeps the open-runs
index, the run's event history and (optionally) the workspace in step, then emits an event. The event is staged
in that same transaction (`adapters/outbox.py`) and published by the relay right after the commit; a kill in
between leaves it staged, and the reaper's outbox sweep publishes it (`services/outbox_relay.py`).

The run store is the one module of `services/runs/` that knows the table: the run item (`pk` its id, listed under
`<workspace>#runs`, an assessment under `<workspace>#assessments`, a query run under `<workspace>#queries`, a
module's test run under `<workspace>#tests`), its events (`<run>#events`), the open-runs index (`runs#open`), and,
in its parts (`store_<part>.py`, reached as attributes of the store), the logs, comments, configuration versions,
task stages, run tasks and their results, health assessments and the runners' capacity item. `delete_all_of`
(`store_deletion.py`) deletes what a workspace's or an organization's runs hold."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from terrace.adapters.blobs import BlobStore
from terrace.adapters.table import ConditionFailed, Delete, Put, Table, WriteOp
from terrace.domain import clock
from terrace.domain.cost_estimation import CostEstimate
from terrace.domain.errors import NotFound
from terrace.domain.ids import looks_like, new_id
from terrace.domain.runs import FINAL, PhaseState, Run, suffix
from terrace.domain.workspace import Workspace
from terrace.services.access.accounts import revocation
from terrace.services.optimistic import optimistic
from terrace.services.outbox_relay import OutboxRelay
from terrace.services.runs.store_assessments import AssessmentStore
from terrace.services.runs.store_configurations import ConfigurationStore
from terrace.services.runs.store_deletion import delete_all_of
from terrace.services.runs.store_logs import CommentStore, LogStore
from terrace.services.runs.store_plan_exports import PlanExportStore
from terrace.services.runs.store_slots import RunnerSlotStore, WakeClaimStore
from terrace.services.runs.store_stages import TaskStageStore
from terrace.services.runs.store_tasks import RunTaskStore, TaskResultStore
from terrace.services.workspaces.store import WorkspaceStore

__all__ = ["ConditionFailed", "RunStore", "WorkspaceWrite", "WriteOp", "event_item", "retrying"]
OPEN_RUNS = "runs#open"
T = TypeVar("T")


def run_to_item(run: Run) -> dict[str, Any]:
    item = dataclasses.asdict(run)
    del item["trail"], item["revoking_tokens"]
    # an assessment, a query run or a module's test run is not among the workspace's runs
    listed = "assessments" if run.assessment else "queries" if run.query else "tests" if run.test else "runs"
    item.update(
        {"pk": run.id, "sk": "run", "gsi1pk": f"{run.workspace_id}#{listed}", "gsi1sk": run.created_at + run.id}
    )
    return item


def run_from_item(item: dict[str, Any]) -> Run:
    data = {k: v for k, v in item.items() if k not in ("pk", "sk", "gsi1pk", "gsi1sk")}
    data["plan"] = PhaseState(**data["plan"])
    data["apply"] = PhaseState(**data["apply"])
    if data.get("cost_estimate"):
        data["cost_estimate"] = CostEstimate(**data["cost_estimate"])
    data.pop("trail", None)
    data.pop("revoking_tokens", None)
    names = {f.name for f in dataclasses.fields(Run)}
    return Run(**{k: v for k, v in data.items() if k in names})


def retrying(step: Callable[[], T], attempts: int = 8) -> T:
    """Run a load-decide-write step on runs again when its conditional write loses a race (runners' reports race
    users' actions: a short growing pause between attempts)."""
    return optimistic(step, attempts=attempts, backoff_s=0.01, exhausted="the run changed concurrently; retry")


def event_item(
    run_id: str,
    at: str,
    action: str,
    description: str,
    *,
    order: int = 0,
    actor: str | None = None,
    comment_id: str | None = None,
) -> dict[str, Any]:
    """A run event row (`<run>#events`, ordered by time, then by `order` within one write)."""
    event_id = f"re-{suffix(run_id)}-{new_id('re')[3:11]}"
    return {
        "pk": f"{run_id}#events",
        "sk": f"{at}#{order:02d}#{event_id}",
        "id": event_id,
        "action": action,
        "description": description,
        "created_at": at,
        "actor": actor,
        "comment_id": comment_id,
    }


def triggered_event(run: Run, at: str) -> list[WriteOp]:
    """The run event naming the run trigger that queued `run` (none for other runs)."""
    if not run.trigger:
        return []
    t = run.trigger
    description = (
        f"queued by run trigger {t['run_trigger_id']}: run {t['source_run_id']} applied in workspace "
        f"{t['source_workspace_name']} ({t['source_workspace_id']})"
    )
    return [Put(event_item(run.id, at, "queued_by_run_trigger", description))]


def run_of_event(event_id: str) -> str | None:
    if not looks_like(event_id, "re") or event_id.count("-") != 2:
        return None
    return "run-" + event_id.split("-")[1]


@dataclass(frozen=True)
class WorkspaceWrite:
    workspace: Workspace  # the new value
    expected_version: int


class RunStore:
    def __init__(self, table: Table, relay: OutboxRelay) -> None:
        self._table = table
        self._relay = relay
        self.logs = LogStore(table)
        self.comments = CommentStore(table)
        self.configurations = ConfigurationStore(table)
        self.stages = TaskStageStore(table)
        self.tasks = RunTaskStore(table)
        self.results = TaskResultStore(table, relay)
        self.assessments = AssessmentStore(table)
        self.slots = RunnerSlotStore(table)
        self.wake_claims = WakeClaimStore(table)
        self.plan_exports = PlanExportStore(table, relay)

    def load(self, run_id: str) -> Run:
        item = self._table.get(run_id, "run") if looks_like(run_id, "run") else None
        if item is None:
            raise NotFound(f"run {run_id} not found")
        return run_from_item(item)

    @staticmethod
    def _revocations(run: Run) -> list[WriteOp]:
        """Revoke the run's tokens whose hash it recorded (older ones: `RunScheduler.revoke_tokens`, after)."""
        run.revoking_tokens = False
        known = [token_id for token_id in run.token_ids if token_id in run.token_hashes]
        run.token_ids = [token_id for token_id in run.token_ids if token_id not in known]
        return [op for token_id in known for op in revocation(token_id, run.token_hashes.pop(token_id))]

    @staticmethod
    def open_index_key(run: Run) -> tuple[str, str]:
        """The run's entry in the open-runs index (while it has not ended)."""
        return OPEN_RUNS, f"{run.created_at}#{run.id}"

    def exists(self, run_id: str) -> bool:
        return self._table.get(run_id, "run") is not None

    def load_many(self, run_ids: list[str]) -> list[Run]:
        return [run_from_item(item) for item in self._table.batch_get([(run_id, "run") for run_id in run_ids])]

    def list_for_workspace(self, workspace_id: str) -> list[Run]:
        """Newest first."""
        return [run_from_item(item) for item in self._table.query(f"{workspace_id}#runs", index="gsi1", reverse=True)]

    def oldest_first(self, workspace_id: str) -> list[Run]:
        """A workspace's runs (not its assessments), oldest first."""
        return [run_from_item(item) for item in self._table.query(f"{workspace_id}#runs", index="gsi1")]

    def tests_of(self, workspace_id: str) -> list[Run]:
        """A module test workspace's test runs (`domain/module_tests.py`), newest first."""
        return [run_from_item(i) for i in self._table.query(f"{workspace_id}#tests", index="gsi1", reverse=True)]

    def queries_of(self, workspace_id: str) -> list[Run]:
        """A workspace's query runs (`domain/query_runs.py`), newest first."""
        return [run_from_item(i) for i in self._table.query(f"{workspace_id}#queries", index="gsi1", reverse=True)]

    def assessments_of(self, workspace_id: str) -> list[Run]:
        """A workspace's health assessment runs, newest first."""
        query = self._table.query(f"{workspace_id}#assessments", index="gsi1", reverse=True)
        return [run_from_item(item) for item in query]

    def latest_assessment(self, workspace_id: str) -> Run | None:
        """The workspace's newest health assessment run (one read of one item)."""
        latest = self._table.query(f"{workspace_id}#assessments", index="gsi1", reverse=True, limit=1)
        return run_from_item(latest[0]) if latest else None

    def open_runs(self) -> list[dict[str, Any]]:
        """Index entries of every non-final run, oldest first: {run_id, organization, workspace_id, status}."""
        return self._table.query(OPEN_RUNS)

    def events(self, run_id: str) -> list[dict[str, Any]]:
        return self._table.query(f"{run_id}#events")

    def event(self, event_id: str) -> dict[str, Any]:
        """One run event by id (its id names its run: `re-<run suffix>-<random>`)."""
        run_id = run_of_event(event_id)
        found = [e for e in self.events(run_id) if e["id"] == event_id] if run_id else []
        if not found:
            raise NotFound(f"run event {event_id} not found")
        return {**found[0], "run_id": run_id}

    def save(
        self,
        runs: list[tuple[Run, int | None]],
        workspace: WorkspaceWrite | None = None,
        previous: dict[str, str] | None = None,
        extra: list[WriteOp] | None = None,
    ) -> None:
        """Write runs (new ones with expected version None), the workspace and `extra` rows in one
        transaction.

        `previous` maps run id -> status before the change, for the emitted events.
        Raises ConditionFailed when anything changed since it was read.
        """
        now = clock.now_iso()
        ops: list[WriteOp] = []
        emitted: list[dict[str, Any]] = []
        for run, expected in runs:
            ops += self._revocations(run) if run.revoking_tokens else []
            before = (previous or {}).get(run.id)
            if expected is not None:
                run.version = expected + 1
            ops.append(Put(run_to_item(run), if_absent=expected is None, if_version=expected))
            index_key = self.open_index_key(run)
            if run.status in FINAL:
                ops.append(Delete(*index_key))
            else:
                ops.append(
                    Put(
                        {
                            "pk": index_key[0],
                            "sk": index_key[1],
                            "run_id": run.id,
                            "status": run.status,
                            "organization": run.organization,
                            "workspace_id": run.workspace_id,
                            "queued_at": run.queued_at or "",
                            "agent_pool_id": run.agent_pool_id or "",  # its agents', not the scaler's runners'
                        }
                    )
                )
            steps = list(run.trail) or ([run.status] if before != run.status else [])
            run.trail.clear()
            for order, status in enumerate(steps):
                description = f"run {before or 'created'} -> {status}"
                ops.append(Put(event_item(run.id, now, status, description, order=order)))
                before = status
            if steps:
                emitted.append(
                    {
                        "type": "run.status_changed",
                        "run_id": run.id,
                        "workspace_id": run.workspace_id,
                        "organization": run.organization,
                        "from": (previous or {}).get(run.id),
                        "to": run.status,
                        "statuses": list(steps),  # every status this write passed, in order (`to` is the last)
                        "at": now,
                    }
                )
        if workspace is not None:
            ops.append(WorkspaceStore.put_op(workspace.workspace, workspace.expected_version))
        staged = [self._relay.outbox.stage(event) for event in emitted]  # in the transaction: never lost to a kill
        self._table.transact(ops + [write for _, write in staged] + list(extra or []))
        self._relay.deliver([entry for entry, _ in staged])  # a failed publish stays staged for the reaper's sweep

    def delete_all_of(
        self,
        *,
        workspace: str | None = None,
        organization: str | None = None,
        blobs: BlobStore,
        revoke: Callable[[str], None],
        before_run_deleted: Callable[[str], None],
    ) -> None:
        """What a workspace's runs hold (runs, events, logs, plans, run tokens, open-run index entries, task stages
        and results, configuration versions, run task attachments), or an organization's (queued jobs, run tasks
        and their name claims): `store_deletion.py`."""
        delete_all_of(
            self,
            self._table,
            workspace=workspace,
            organization=organization,
            blobs=blobs,
            revoke=revoke,
            before_run_deleted=before_run_deleted,
        )
