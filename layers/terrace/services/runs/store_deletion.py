"""What the run store deletes when a workspace or an organization goes (`RunStore.delete_all_of`, called by the
purge use case, `services/workflows/purge.py`).

A workspace's: each run, query run and test run (its tokens revoked, its logs' chunks and archives, its plan files,
its plan exports' bundles and items, its events, its task stages with their results and the results' access tokens,
its open-runs index entry, then the run item), its configuration versions (archives, then items) and its run task
attachments. An organization's: its queued jobs (`adapters/table_job_queue.py`'s partition) and its run tasks with
their attachments' claims and name claims.

Each run goes from the leaves up and ends with the run item, so a deletion cut short leaves the run listed and is
finished by deleting again. Blobs are deleted through the blob port, tokens through `revoke` (the accounts), and
`before_run_deleted` is told of each run before its item goes (what other areas keep per run: its policy
evaluations)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from terrace.adapters.blobs import BlobStore
from terrace.adapters.table import Table
from terrace.domain.plan_json import stored_plan_keys
from terrace.domain.runs import Run
from terrace.services.runs.store_logs import archive_key, log_partition

if TYPE_CHECKING:
    from terrace.services.runs.store import RunStore

JOBS = "org#{organization}#jobs"  # the job queue's partition of an organization (adapters/table_job_queue.py)


def delete_all_of(
    store: RunStore,
    table: Table,
    *,
    workspace: str | None,
    organization: str | None,
    blobs: BlobStore,
    revoke: Callable[[str], None],
    before_run_deleted: Callable[[str], None],
) -> None:
    if (workspace is None) == (organization is None):
        raise ValueError("delete_all_of takes a workspace or an organization")
    deletion = _Deletion(store, table, blobs, revoke)
    if workspace is not None:
        runs = [*store.oldest_first(workspace), *store.queries_of(workspace), *store.tests_of(workspace)]
        for run in [*runs, *store.assessments_of(workspace)]:
            deletion.run(run, before_run_deleted)
        for cv in store.configurations.of_workspace(workspace):
            blobs.delete(cv.blob_key)
            store.configurations.delete(cv)
        for attached in store.tasks.attached_to(workspace):
            table.delete(f"{attached.task_id}#workspaces", workspace)
            table.delete(attached.id, "wstask")
    if organization is not None:
        deletion.all(table.query(JOBS.format(organization=organization)))
        for task in table.query(f"org#{organization}#tasks", index="gsi1"):
            deletion.all(table.query(f"{task['pk']}#workspaces"))
            table.delete(task["pk"], task["sk"])
        deletion.all(table.query(f"org#{organization}#tasknames"))


class _Deletion:
    def __init__(self, store: RunStore, table: Table, blobs: BlobStore, revoke: Callable[[str], None]) -> None:
        self._store, self._table, self._blobs, self._revoke = store, table, blobs, revoke

    def run(self, run: Run, before_run_deleted: Callable[[str], None]) -> None:
        for token_id in run.token_ids:
            self._revoke(token_id)
        for phase in (run.plan, run.apply):
            self.all(self._table.query(log_partition(phase.id)))
            self._blobs.delete(archive_key(phase.id))
            for key in stored_plan_keys(phase.artifact_key, phase.json_key):
                if key.startswith(f"plans/{run.id}/"):
                    self._blobs.delete(key)
        self.all(self._table.query(f"{run.id}#events"))
        for export in self._store.plan_exports.of_run(run.id):
            if export.blob_key:
                self._blobs.delete(export.blob_key)
            self._store.plan_exports.delete(export)
        for stage in self._table.query(f"{run.id}#task-stages", index="gsi1"):
            for result in self._table.query(f"{stage['pk']}#task-results", index="gsi1"):
                if result.get("token_id"):
                    self._revoke(result["token_id"])
                self._table.delete(result["pk"], "taskrs#token")
                self._table.delete(result["pk"], result["sk"])
            self._table.delete(stage["pk"], stage["sk"])
        before_run_deleted(run.id)
        self._table.delete(*self._store.open_index_key(run))
        self._table.delete(run.id, "run")

    def all(self, items: list[dict[str, Any]]) -> None:
        if items:
            self._table.batch_delete([(item["pk"], item["sk"]) for item in items])
