"""The runner's enrollment at start: it is given a single-use code, never a token (a Fargate task's environment
is visible to anyone who may describe the task), and exchanges it for its token (`POST /api/runner/enroll`,
`domain/jobs.py` step 0). On ECS it names its own task, read from the container metadata endpoint
(`ECS_CONTAINER_METADATA_URI_V4`/task), which the API checks against the task the code was bound to."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Mapping

import httpx

from terrace.domain.jobs import EnrollRequest, EnrollResponse
from terrace.runner.client import ApiError, with_retries

log = logging.getLogger("terrace.runner")
METADATA_VARIABLE = "ECS_CONTAINER_METADATA_URI_V4"
NOT_BOUND_WAIT_S = 60.0  # the scaler binds the code once RunTask answered: seconds, normally
NOT_BOUND_PAUSE_S = 1.0


def own_task_arn(env: Mapping[str, str] | None = None, transport: httpx.BaseTransport | None = None) -> str | None:
    """This task's ARN from the ECS container metadata endpoint (v4), or None outside ECS."""
    base = (os.environ if env is None else env).get(METADATA_VARIABLE)
    if not base:
        return None
    with httpx.Client(timeout=10.0, transport=transport) as client:
        response = with_retries(lambda: client.get(f"{base.rstrip('/')}/task"), "task metadata")
        response.raise_for_status()
        return str(response.json()["TaskARN"])


def enroll(
    api_url: str,
    code: str,
    task_arn: str | None,
    ssl_cert_file: str | None = None,
    transport: httpx.BaseTransport | None = None,
    not_bound_wait_s: float = NOT_BOUND_WAIT_S,
) -> EnrollResponse:
    """The runner's token for its enrollment code; ApiError when the API refuses it."""
    body = EnrollRequest(code=code, task_arn=task_arn).model_dump_json()
    deadline = time.monotonic() + not_bound_wait_s
    with httpx.Client(
        base_url=f"{api_url.rstrip('/')}/api/runner",
        verify=ssl_cert_file or True,
        transport=transport,
        timeout=httpx.Timeout(30.0, connect=10.0),
    ) as client:
        while True:
            response = with_retries(
                lambda: client.post("/enroll", content=body, headers={"Content-Type": "application/json"}), "enroll"
            )
            if response.status_code == 409 and time.monotonic() < deadline:
                time.sleep(NOT_BOUND_PAUSE_S)  # our task is not registered with the code yet
                continue
            if response.status_code >= 400:
                raise ApiError(f"enroll: HTTP {response.status_code}: {response.text[:300]}", response.status_code)
            return EnrollResponse.model_validate_json(response.content)
