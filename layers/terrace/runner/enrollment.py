"""The runner's enrollment at start: it is never given a token (a Fargate task's environment is visible to anyone
who may describe the task) and exchanges what it has for its token (`POST /api/runner/enroll`, `domain/jobs.py`
step 0). A local runner has a single-use code. A runner on ECS has nothing: it names its own task, read from the
container metadata endpoint (`ECS_CONTAINER_METADATA_URI_V4`/task), and proves it is that task with an
`sts:GetCallerIdentity` request signed by its task role's credentials (SigV4, `runner/sigv4.py`; the credentials
from the ECS container credentials endpoint), with the API's URL as `X-Terrace-Server-ID` among the signed headers
(`domain/runner_identity.py`). The API, not the runner, sends it to STS."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Mapping
from datetime import datetime

import httpx

from terrace.domain.jobs import EnrollRequest, EnrollResponse, SignedRequest
from terrace.domain.runner_identity import ACTION_BODY, CONTENT_TYPE, SERVER_ID_HEADER
from terrace.runner.client import ApiError, with_retries
from terrace.runner.sigv4 import Credentials, sign, task_role_credentials

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


def task_proof(api_url: str, env: Mapping[str, str] | None = None) -> SignedRequest:
    """This task's `identity_proof` to the STS endpoint the API trusts (`TERRACE_STS_ENDPOINT`, which the task
    definition sets), else to its region's."""
    env = os.environ if env is None else env
    region = env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or "us-east-1"
    endpoint = env.get("TERRACE_STS_ENDPOINT") or f"https://sts.{region}.amazonaws.com/"
    return identity_proof(api_url, endpoint, region)


def identity_proof(
    api_url: str, endpoint: str, region: str, credentials: Credentials | None = None, now: datetime | None = None
) -> SignedRequest:
    """A GetCallerIdentity to `endpoint` signed (SigV4) for the API at `api_url` with `credentials`, by default the
    task role's from the ECS container credentials endpoint."""
    headers = {"Content-Type": CONTENT_TYPE, SERVER_ID_HEADER: api_url.rstrip("/")}
    signed = sign("POST", endpoint, headers, ACTION_BODY, credentials or task_role_credentials(), region, "sts", now)
    return SignedRequest(method="POST", url=endpoint, headers=signed, body=ACTION_BODY)


def enroll(
    api_url: str,
    code: str | None,
    task_arn: str | None,
    ssl_cert_file: str | None = None,
    transport: httpx.BaseTransport | None = None,
    not_bound_wait_s: float = NOT_BOUND_WAIT_S,
    identity: SignedRequest | None = None,
) -> EnrollResponse:
    """The runner's token for its enrollment code, or (a task) for `identity`, its proof of being `task_arn`;
    ApiError when the API refuses it."""
    body = EnrollRequest(code=code or None, task_arn=task_arn, identity=identity).model_dump_json()
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
