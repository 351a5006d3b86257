"""Sending a run task's request: TFC's run task payload (version 1), signed, off the request path.

Each `run_task.deliver` event (`task_results.py` queues the first; the events worker hands it here) POSTs one task
result's payload to its task's URL through the outbound port (`adapters/outbound.py`: the destination rules are
checked again against the addresses the name resolves to). With an HMAC key, `X-TFC-Task-Signature` is the hex
HMAC-SHA512 of the body under it. A 2xx marks the result `running` until the service calls back; a connection error,
a timeout or a 5xx is tried again `RETRIES` times with growing delays (a delayed event); a 4xx, a blocked
destination or the last failure marks it `errored`.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
from collections.abc import Callable
from typing import Any

from terrace.adapters.outbound import Outbound
from terrace.domain import run_tasks as model
from terrace.domain.errors import NotFound
from terrace.domain.run_tasks import TaskResult
from terrace.domain.runs import Run
from terrace.services.runs.run_tasks import RunTaskService
from terrace.services.runs.store import RunStore
from terrace.services.runs.task_results import DELIVER, TaskResultService
from terrace.services.workspaces.workspaces import WorkspaceService

log = logging.getLogger("terrace.run_tasks")

RETRY_DELAYS_S = (5, 30, 120)  # after the first attempt's failure, the second's, the third's
REQUEST_TIMEOUT_S = 10.0
SIGNATURE_HEADER = "X-TFC-Task-Signature"

Later = Callable[[dict[str, Any], int], None]  # publish an event after a delay (seconds)


def signature(body: bytes, key: str) -> str:
    return hmac.new(key.encode(), body, hashlib.sha512).hexdigest()


class TaskDelivery:
    def __init__(
        self,
        results: TaskResultService,
        tasks: RunTaskService,
        store: RunStore,
        workspaces: WorkspaceService,
        outbound: Outbound,
        later: Later,
        public_url: str,
    ) -> None:
        self._results, self._tasks, self._store, self._workspaces = results, tasks, store, workspaces
        self._outbound, self._later, self._public_url = outbound, later, public_url.rstrip("/")

    def handle(self, event: dict[str, Any]) -> None:
        """`run_task.deliver`: one attempt at one result's request."""
        result = self._results.load(str(event.get("result_id") or ""))
        attempt = int(event.get("attempt") or 1)
        if result is None or result.status != model.TR_PENDING:
            return  # decided, or the service already answered
        try:
            run = self._store.load(result.run_id)
        except NotFound:  # a run begun before its first write (a speculative run's pre-plan stage): soon there
            if attempt <= len(RETRY_DELAYS_S):
                self._later({"type": DELIVER, "result_id": result.id, "attempt": attempt + 1}, RETRY_DELAYS_S[0])
            else:
                self._results.finished(result.id, model.TR_ERRORED, "the run of this task result is gone")
            return
        if run.final:
            self._results.finished(result.id, model.TR_UNREACHABLE, f"the run ended ({run.status}) before its request")
            return
        task = self._tasks.load(result.task_id)
        if task is None:
            self._results.finished(result.id, model.TR_ERRORED, "the run task was deleted")
            return
        body = json.dumps(self.payload(result, run)).encode()
        headers = {"Content-Type": "application/json", "User-Agent": "Terrace run tasks"}
        key = self._tasks.hmac_key(task)
        if key:
            headers[SIGNATURE_HEADER] = signature(body, key)
        answer = self._outbound.post(task.url, body, headers, REQUEST_TIMEOUT_S)
        if answer.ok:
            self._results.acknowledged(result.id)
            return
        problem = answer.error or f"the service answered {answer.status}"
        retryable = answer.error is None and (answer.status or 0) >= 500
        retryable = retryable or (answer.error is not None and not answer.error.startswith("blocked"))
        if retryable and attempt <= len(RETRY_DELAYS_S):
            log.info("run task request of %s failed (%s); trying again", result.id, problem)
            self._later({"type": DELIVER, "result_id": result.id, "attempt": attempt + 1}, RETRY_DELAYS_S[attempt - 1])
            return
        self._results.finished(result.id, model.TR_ERRORED, f"the run task request failed: {problem}")

    def payload(self, result: TaskResult, run: Run) -> dict[str, Any]:
        """TFC's run task request body (payload version 1)."""
        ws = self._workspaces.load(run.workspace_id)
        organization = self._workspaces.organization_of(ws).name
        api, app = f"{self._public_url}/api/v2", f"{self._public_url}/app/{organization}/workspaces/{ws.name}"
        planned = result.stage != "pre_plan"
        download = f"{api}/configuration-versions/{run.configuration_version_id}/download"
        return {
            "payload_version": 1,
            "stage": result.stage,
            "access_token": self._results.access_token(result),
            "capabilities": {"outcomes": True},
            "configuration_version_download_url": download,
            "configuration_version_id": run.configuration_version_id,
            "is_speculative": run.plan_only,
            "organization_name": organization,
            "plan_json_api_url": f"{api}/plans/{run.plan.id}/json-output" if planned else None,
            "run_app_url": f"{app}/runs/{run.id}",
            "run_created_at": run.created_at,
            "run_created_by": run.created_by,
            "run_id": run.id,
            "run_message": run.message,
            "task_result_callback_url": f"{api}/task-results/{result.id}/callback",
            "task_result_enforcement_level": result.enforcement_level,
            "task_result_id": result.id,
            "vcs_branch": None,
            "vcs_commit_url": None,
            "vcs_pull_request_url": None,
            "vcs_repo_url": None,
            "workspace_app_url": app,
            "workspace_id": ws.id,
            "workspace_name": ws.name,
            "workspace_working_directory": ws.working_directory or "",
        }
