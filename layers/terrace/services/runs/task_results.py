"""Run tasks in a run: its task results, the run tasks' `StageParticipant` (kind `task-results`) and the callback.

When a run is created, each enabled task attached to its workspace at a stage, and each enabled global task of its
organization at that stage (`RunTask.global_configuration`, while the organization is entitled to global run tasks:
`domain/entitlements.py`), gets a `pending` result in that
stage (`prepare`; HCP Terraform lists them from the run's creation on). When the run reaches the stage, `begin`
issues each result an access token (`PrincipalKind.RUN_TASK`: its run's plan JSON and configuration version, and its
own callback; it expires after the task's time limit) and queues its request (`task_delivery.py`, an events-queue
event). The service answers through `PATCH /task-results/:id/callback` with that token: `running`, then `passed` or
`failed` (message, url, outcomes). `verdict` is `pending` while a result is not final; a result that outlived
`TASK_TIMEOUT_S` (10 minutes, TFC's) is `errored` then. Mandatory results that did not pass fail the stage; advisory
ones are only reported.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable
from typing import Any

from terrace.adapters.encryptor import Encryptor
from terrace.adapters.events import EventPublisher
from terrace.domain import clock, limits
from terrace.domain import run_tasks as model
from terrace.domain.errors import Invalid, NotFound
from terrace.domain.ids import new_id
from terrace.domain.principal import Principal, PrincipalKind
from terrace.domain.run_tasks import TaskResult
from terrace.services.access.accounts import AccountService
from terrace.services.access.authz import Authorizer
from terrace.services.optimistic import optimistic
from terrace.services.runs.run_tasks import RunTaskService
from terrace.services.runs.runs import RunService
from terrace.services.runs.stage_participants import StageContext, Verdict, stage_progressed
from terrace.services.runs.store_tasks import TaskResultStore

DELIVER = "run_task.deliver"  # the events-queue event that sends one result's request (task_delivery.py)
KIND = "task-results"


class TaskResultService:
    kind = KIND

    def __init__(
        self,
        store: TaskResultStore,
        tasks: RunTaskService,
        runs: RunService,
        accounts: AccountService,
        encryptor: Encryptor,
        publisher: EventPublisher,
        *,
        timeout_s: int = model.TASK_TIMEOUT_S,
    ) -> None:
        self._store, self._tasks, self._runs, self._accounts = store, tasks, runs, accounts
        self._encryptor, self._publisher, self._timeout_s = encryptor, publisher, timeout_s
        self.now: Callable[[], float] = clock.epoch

    # storage -----------------------------------------------------------------------------
    def load(self, result_id: str) -> TaskResult | None:
        return self._store.find(result_id)

    def of_stage(self, stage_id: str) -> builtins.list[TaskResult]:
        return self._store.of_stage(stage_id)

    def save(self, result: TaskResult, *, new: bool = False, event: dict[str, Any] | None = None) -> None:
        """Write `result` (and stage `event` in the same transaction, published once it committed: a result's first
        request is staged with the write that starts it, the outbox). Raises ConditionFailed."""
        self._store.save(result, new=new, event=event)

    def change(self, result_id: str, change: Callable[[TaskResult], bool]) -> TaskResult | None:
        """Apply `change` to the stored result (it returns False to write nothing), again on a lost race."""

        def step() -> TaskResult | None:
            result = self.load(result_id)
            if result is None or not change(result):
                return result
            self.save(result)
            return result

        return optimistic(step, attempts=8, backoff_s=0.01, exhausted=f"task result {result_id} is busy; retry")

    # reads -------------------------------------------------------------------------------
    def get(self, principal: Principal, result_id: str) -> TaskResult:
        """A result whose run the caller may read (the same 404 for hidden and absent results)."""
        result = self.load(result_id)
        missing = NotFound(f"task result {result_id} not found")
        if result is None:
            raise missing
        try:
            self._runs.get(principal, result.run_id)
        except NotFound as exc:
            raise missing from exc
        return result

    def of_ids(self, principal: Principal, result_ids: builtins.list[str]) -> builtins.list[TaskResult]:
        """Results of stages the caller already read (`include=task_results`): only those of runs it may read."""
        found = self._store.many(result_ids)
        readable: dict[str, bool] = {}
        shown = []
        for result_id in result_ids:
            result = found.get(result_id)
            if result is None:
                continue
            if result.run_id not in readable:
                try:
                    self._runs.get(principal, result.run_id)
                    readable[result.run_id] = True
                except NotFound:
                    readable[result.run_id] = False
            if readable[result.run_id]:
                shown.append(result)
        return shown

    # the participant ---------------------------------------------------------------------
    def prepare(self, context: StageContext) -> builtins.list[str]:
        return [r.id for r in self._create(context)]

    def _create(self, context: StageContext) -> builtins.list[TaskResult]:
        run = context.run
        every = self._tasks.attached_to(run.workspace_id)
        tasks = [
            (wt.id, wt.enforcement_level, self._tasks.load(wt.task_id)) for wt in every if context.stage in wt.stages
        ]
        own = {wt.task_id for wt in every}  # the workspace's own attachment of a global task wins
        tasks += [("", t.global_configuration["enforcement-level"], t)  # type: ignore[index]
                  for t in self._tasks.global_tasks(run.organization, context.stage) if t.id not in own]  # fmt: skip
        created = []
        for workspace_task_id, enforcement_level, task in tasks:
            if task is None or not task.enabled:
                continue
            now = clock.now_iso()
            result = TaskResult(
                id=new_id("taskrs"),
                run_id=run.id,
                organization=run.organization,
                workspace_id=run.workspace_id,
                stage_id=context.stage_id,
                stage=context.stage,
                task_id=task.id,
                task_name=task.name,
                task_url=task.url,
                workspace_task_id=workspace_task_id,  # "" for a global task
                enforcement_level=enforcement_level,
                created_at=now,
                updated_at=now,
            )
            result.status_timestamps["pending-at"] = now
            self.save(result, new=True)
            created.append(result)
        return created

    def begin(self, context: StageContext) -> builtins.list[str]:
        results = self.of_stage(context.stage_id) or self._create(context)
        for result in results:
            if result.status == model.TR_PENDING and result.token_id is None:
                self._start(result)
        return [r.id for r in results]

    def _start(self, result: TaskResult) -> None:
        issued = self._accounts.issue_token(
            PrincipalKind.RUN_TASK,
            result.run_id,
            description=f"run task access token for {result.id}",
            organization=result.organization,
            workspace_id=result.workspace_id,
            ttl_s=self._timeout_s + 60,
        )
        result.token_id = issued.token.id
        result.started_at_epoch = self.now()
        ciphertext = self._encryptor.encrypt(issued.secret, {"task-result": result.id})
        self._store.put_token(result.id, ciphertext)
        self.save(result, event={"type": DELIVER, "result_id": result.id, "attempt": 1})

    def access_token(self, result: TaskResult) -> str:
        """The access token given with a result's request (kept encrypted beside it)."""
        ciphertext = self._store.token(result.id)
        if ciphertext is None:
            raise NotFound(f"task result {result.id} has no access token")
        return self._encryptor.decrypt(ciphertext, {"task-result": result.id})

    def verdict(self, context: StageContext) -> Verdict:
        results = [self._timed_out(r) for r in self.of_stage(context.stage_id)]
        if any(not r.final for r in results):
            return "pending"
        if any(r.mandatory and r.status != model.TR_PASSED for r in results):
            return "failed"
        return "passed"

    def _timed_out(self, result: TaskResult) -> TaskResult:
        started = result.started_at_epoch
        if result.final or started is None or self.now() - started <= self._timeout_s:
            return result
        message = f"the task did not answer within {self._timeout_s // 60} minutes"

        def expire(current: TaskResult) -> bool:
            if current.final:
                return False
            current.mark(model.TR_ERRORED, clock.now_iso(), message)
            return True

        changed = self.change(result.id, expire) or result
        self._revoke(changed)
        return changed

    def overridden(self, context: StageContext) -> None:
        """Run tasks never await an override (a mandatory failure fails the stage)."""

    # results changing --------------------------------------------------------------------
    def finished(self, result_id: str, status: str, message: str) -> TaskResult | None:
        """A result the delivery decided (errored: the service could not be reached, or refused the request)."""

        def decide(current: TaskResult) -> bool:
            if current.final:
                return False
            current.mark(status, clock.now_iso(), message)
            return True

        result = self.change(result_id, decide)
        if result is not None and result.final:
            self._revoke(result)
            self._publisher.publish(stage_progressed(result.stage_id, result.run_id))
        return result

    def acknowledged(self, result_id: str) -> None:
        """The service accepted the request (a 2xx): the result is running until its callback."""

        def running(current: TaskResult) -> bool:
            if current.status != model.TR_PENDING:
                return False
            current.mark(model.TR_RUNNING, clock.now_iso())
            return True

        self.change(result_id, running)

    def callback(self, principal: Principal, result_id: str, body: Any) -> TaskResult:
        """`PATCH /task-results/:id/callback` with the result's access token: status, message, url, outcomes."""
        result = self.load(result_id)
        Authorizer.require_task_callback(principal, result.token_id if result else None, f"task result {result_id}")
        assert result is not None
        data = body.get("data") if isinstance(body, dict) else None
        if not isinstance(data, dict) or data.get("type") != "task-results":
            raise Invalid("request body must be a task-results document", pointer="/data/type")
        raw = data.get("attributes")
        attrs: dict[str, Any] = raw if isinstance(raw, dict) else {}
        status = attrs.get("status")
        if status not in model.CALLBACK_STATUSES:
            raise Invalid(
                f"status must be one of {', '.join(model.CALLBACK_STATUSES)}", pointer="/data/attributes/status"
            )
        message = limits.text(attrs.get("message") or "", "message", model.MESSAGE_MAX)
        url = attrs.get("url")
        if url is not None:
            url = limits.text(url, "url", model.URL_MAX)
        outcomes = model.outcomes_of(data.get("relationships"))

        def record(current: TaskResult) -> bool:
            if current.final:
                raise Invalid(f"task result {result_id} is already {current.status}", pointer="/data/attributes/status")
            current.mark(status, clock.now_iso(), message)
            current.url = url or current.url
            if outcomes is not None:
                current.outcomes = outcomes
            return True

        changed = self.change(result_id, record) or result
        if changed.final:
            self._revoke(changed)
        self._publisher.publish(stage_progressed(changed.stage_id, changed.run_id))
        return changed

    def _revoke(self, result: TaskResult) -> None:
        if result.token_id:
            try:
                self._accounts.revoke_token(result.token_id)
            except NotFound:
                pass
