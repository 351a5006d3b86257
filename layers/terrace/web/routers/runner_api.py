"""/api/runner: the runner protocol (see terrace.domain.jobs). Authenticated by the runner secret."""

from __future__ import annotations

import hmac
from typing import Any

from fastapi import APIRouter, Depends, Request, Response

from terrace.domain.errors import BadRequest, Invalid, Unauthenticated
from terrace.domain.jobs import ClaimRequest, FinishRequest, HeartbeatRequest, HeartbeatResponse, JobSpec
from terrace.web.deps import ContainerDep, bearer_token
from terrace.web.jsonapi import JSONBody, RawBody

MAX_LOG_PUT = 1024 * 1024


def require_runner(request: Request, container: ContainerDep) -> None:
    expected = container.settings.runner_secret
    if not expected or not hmac.compare_digest(bearer_token(request).encode(), expected.encode()):
        raise Unauthenticated("a valid runner secret is required")


router = APIRouter(prefix="/api/runner", dependencies=[Depends(require_runner)])


def _model(body: Any, model: type) -> object:
    try:
        return model.model_validate(body or {})  # type: ignore[attr-defined]
    except Exception as exc:
        raise Invalid(f"invalid {model.__name__}: {exc}") from exc


@router.post("/jobs/{job_id}/claim")
def claim(job_id: str, raw: JSONBody, container: ContainerDep) -> JobSpec:
    body = _model(raw, ClaimRequest)
    assert isinstance(body, ClaimRequest)
    return container.jobs.claim(job_id, body)


@router.post("/jobs/{job_id}/heartbeat")
def heartbeat(job_id: str, raw: JSONBody, container: ContainerDep) -> HeartbeatResponse:
    body = _model(raw, HeartbeatRequest)
    assert isinstance(body, HeartbeatRequest)
    return container.jobs.heartbeat(job_id, body)


@router.put("/jobs/{job_id}/logs")
def append_log(job_id: str, request: Request, data: RawBody, container: ContainerDep) -> Response:
    try:
        offset = int(request.query_params.get("offset", ""))
    except ValueError as exc:
        raise BadRequest("offset must be an integer") from exc
    if offset < 0 or len(data) > MAX_LOG_PUT:
        raise BadRequest(f"offset must be >= 0 and a log PUT at most {MAX_LOG_PUT} bytes")
    container.jobs.append_log(job_id, offset, data)
    return Response(status_code=204)


@router.post("/jobs/{job_id}/finish")
def finish(job_id: str, raw: JSONBody, container: ContainerDep) -> Response:
    body = _model(raw, FinishRequest)
    assert isinstance(body, FinishRequest)
    run = container.jobs.finish(job_id, body)
    return Response(content=f'{{"run_status": "{run.status}"}}', media_type="application/json")
