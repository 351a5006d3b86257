"""The run store's run tasks and task results (`store.py`: `RunStore.tasks`, `RunStore.results`).

- A run task is one item (`task-…`, sort key `task`) listed per organization through gsi1 (`org#<org>#tasks`, by
  name); its name is claimed in `org#<org>#tasknames` (lower case), so names are unique in an organization.
- A workspace attachment is one item (`wstask-…`, sort key `wstask`) listed per workspace through gsi1
  (`<workspace>#tasks`); the claim `<task>#workspaces` / `<workspace>` allows one attachment of a task per
  workspace and is how a task finds its attachments.
- A task result is one item (`taskrs-…`, sort key `taskrs`) listed per stage through gsi1 (`<stage>#task-results`),
  its access token's ciphertext beside it (sort key `taskrs#token`).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from terrace.adapters.table import ConditionFailed, Delete, Put, Table, WriteOp
from terrace.domain import stage_usage
from terrace.domain.ids import looks_like
from terrace.domain.run_tasks import RunTask, TaskResult, WorkspaceTask
from terrace.services import shared_keys
from terrace.services.outbox_relay import OutboxRelay


def _fields(cls: Any, item: dict[str, Any]) -> dict[str, Any]:
    return {f.name: item[f.name] for f in dataclasses.fields(cls) if f.name in item}


def task_item(task: RunTask) -> dict[str, Any]:
    keys = {"pk": task.id, "sk": "task", "gsi1pk": f"org#{task.organization}#tasks", "gsi1sk": task.name.lower()}
    return {**dataclasses.asdict(task), **keys}


def attachment_item(wt: WorkspaceTask) -> dict[str, Any]:
    keys = {"pk": wt.id, "sk": "wstask", "gsi1pk": f"{wt.workspace_id}#tasks", "gsi1sk": f"{wt.created_at}#{wt.id}"}
    return {**dataclasses.asdict(wt), **keys}


def result_item(result: TaskResult) -> dict[str, Any]:
    order = f"{result.created_at}#{result.id}"
    keys = {"pk": result.id, "sk": "taskrs", "gsi1pk": f"{result.stage_id}#task-results", "gsi1sk": order}
    return {**dataclasses.asdict(result), **keys}


def name_claim(organization: str, name: str) -> tuple[str, str]:
    return f"org#{organization}#tasknames", name.lower()


def attached_claim(task_id: str, workspace_id: str) -> tuple[str, str]:
    return f"{task_id}#workspaces", workspace_id


class RunTaskStore:
    def __init__(self, table: Table) -> None:
        self._table = table

    # organization tasks ------------------------------------------------------------------
    def find(self, task_id: str) -> RunTask | None:
        item = self._table.get(task_id, "task") if looks_like(task_id, "task") else None
        return RunTask(**_fields(RunTask, item)) if item else None

    def of_organization(self, org_key: str) -> list[RunTask]:
        """By name."""
        return [RunTask(**_fields(RunTask, i)) for i in self._table.query(f"org#{org_key}#tasks", index="gsi1")]

    def create(self, task: RunTask) -> None:
        """The task, its name claim and the organization's run-task usage marker (its runs' stages ask run tasks),
        in one transaction; raises ConditionFailed when the name (or the id) is taken."""
        claim = name_claim(task.organization, task.name)
        self._table.transact(
            [
                Put({"pk": claim[0], "sk": claim[1], "task_id": task.id}, if_absent=True),
                Put(task_item(task), if_absent=True),
                Put(shared_keys.stage_usage_marker(task.organization, stage_usage.RUN_TASKS)),
            ]
        )

    def replace(self, task: RunTask, expected_version: int, old_name: str) -> None:
        """Write `task` (its version the next one) from `expected_version`, moving its name claim when the name
        changed. Raises ConditionFailed: `name_taken` tells a taken name from a concurrent change."""
        ops: list[WriteOp] = [Put(task_item(task), if_version=expected_version)]
        if task.name.lower() != old_name.lower():
            claim = name_claim(task.organization, task.name)
            ops += [
                Delete(*name_claim(task.organization, old_name)),
                Put({"pk": claim[0], "sk": claim[1], "task_id": task.id}, if_absent=True),
            ]
        self._table.transact(ops)

    def name_taken(self, organization: str, name: str) -> bool:
        return self._table.get(*name_claim(organization, name)) is not None

    def delete(self, task: RunTask) -> None:
        """The task, its name claim and its workspace attachments (one transaction per attachment, then one)."""
        for claim in self._table.query(f"{task.id}#workspaces"):
            self._table.transact([Delete(claim["attachment_id"], "wstask"), Delete(claim["pk"], claim["sk"])])
        self._table.transact([Delete(*name_claim(task.organization, task.name)), Delete(task.id, "task")])

    # workspace attachments ---------------------------------------------------------------
    def attachments_of_task(self, task_id: str) -> list[WorkspaceTask]:
        ids = [claim["attachment_id"] for claim in self._table.query(f"{task_id}#workspaces")]
        return [WorkspaceTask(**_fields(WorkspaceTask, i)) for i in self._table.batch_get([(i, "wstask") for i in ids])]

    def attached_to(self, workspace_id: str) -> list[WorkspaceTask]:
        items = self._table.query(f"{workspace_id}#tasks", index="gsi1")
        return [WorkspaceTask(**_fields(WorkspaceTask, i)) for i in items]

    def attachment(self, attachment_id: str) -> WorkspaceTask | None:
        item = self._table.get(attachment_id, "wstask") if looks_like(attachment_id, "wstask") else None
        return WorkspaceTask(**_fields(WorkspaceTask, item)) if item else None

    def attach(self, wt: WorkspaceTask) -> None:
        """Raises ConditionFailed when the task is attached to the workspace already."""
        claim = attached_claim(wt.task_id, wt.workspace_id)
        self._table.transact(
            [
                Put({"pk": claim[0], "sk": claim[1], "attachment_id": wt.id}, if_absent=True),
                Put(attachment_item(wt), if_absent=True),
            ]
        )

    def replace_attachment(self, wt: WorkspaceTask, expected_version: int) -> None:
        self._table.put(attachment_item(wt), if_version=expected_version)

    def detach(self, wt: WorkspaceTask) -> None:
        self._table.transact([Delete(wt.id, "wstask"), Delete(*attached_claim(wt.task_id, wt.workspace_id))])


class TaskResultStore:
    def __init__(self, table: Table, relay: OutboxRelay) -> None:
        self._table, self._relay = table, relay

    def find(self, result_id: str) -> TaskResult | None:
        item = self._table.get(result_id, "taskrs") if looks_like(result_id, "taskrs") else None
        return TaskResult(**_fields(TaskResult, item)) if item else None

    def many(self, result_ids: list[str]) -> dict[str, TaskResult]:
        """The stored results of `result_ids` (one batch read), by id."""
        items = self._table.batch_get([(i, "taskrs") for i in result_ids if looks_like(i, "taskrs")])
        return {item["pk"]: TaskResult(**_fields(TaskResult, item)) for item in items}

    def of_stage(self, stage_id: str) -> list[TaskResult]:
        items = self._table.query(f"{stage_id}#task-results", index="gsi1")
        return [TaskResult(**_fields(TaskResult, i)) for i in items]

    def save(self, result: TaskResult, *, new: bool = False, event: dict[str, Any] | None = None) -> None:
        """Write `result` (new: absent; else from the version read, its version then the next one) and stage `event`
        in the same transaction, published once it committed. Raises ConditionFailed, the version unchanged."""
        expected = result.version
        if not new:
            result.version = expected + 1
        write = Put(result_item(result), if_absent=new, if_version=None if new else expected)
        staged = [self._relay.outbox.stage(event)] if event is not None else []
        try:
            self._table.transact([write, *(op for _, op in staged)])
        except ConditionFailed:
            result.version = expected
            raise
        self._relay.deliver([entry for entry, _ in staged])

    def put_token(self, result_id: str, ciphertext: str) -> None:
        self._table.put({"pk": result_id, "sk": "taskrs#token", "ciphertext": ciphertext})

    def token(self, result_id: str) -> str | None:
        """The ciphertext of the result's access token."""
        item = self._table.get(result_id, "taskrs#token")
        return str(item["ciphertext"]) if item else None
