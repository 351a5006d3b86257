"""/api/runner: the runner protocol (see terrace.domain.jobs). Authenticated by the runner secret."""

from __future__ import annotations

import hmac

from fastapi import APIRouter, Depends, Request, Response

from terrace.domain.errors import BadRequest, Invalid, Unauthenticated
from terrace.domain.jobs import ClaimRequest, FinishRequest, HeartbeatRequest, HeartbeatResponse, JobSpec
from terrace.web.deps import ContainerDep, bearer_token
from terrace.web.jsonapi import read_json

MAX_LOG_PUT = 1024 * 1024


def require_runner(request: Request, container: ContainerDep) -> None:
    expected = container.settings.runner_secret
    if not expected or not hmac.compare_digest(bearer_token(request).encode(), expected.encode()):
        raise Unauthenticated("a valid runner secret is required")


router = APIRouter(prefix="/api/runner", dependencies=[Depends(require_runner)])


async def _model(request: Request, model: type) -> object:
    body = await read_json(request)
    try:
        return model.model_validate(body or {})  # type: ignore[attr-defined]
    except Exception as exc:
        raise Invalid(f"invalid {model.__name__}: {exc}") from exc


@router.post("/jobs/{job_id}/claim")
async def claim(job_id: str, request: Request, container: ContainerDep) -> JobSpec:
    body = await _model(request, ClaimRequest)
    assert isinstance(body, ClaimRequest)
    return container.jobs.claim(job_id, body)


@router.post("/jobs/{job_id}/heartbeat")
async def heartbeat(job_id: str, request: Request, container: ContainerDep) -> HeartbeatResponse:
    body = await _model(request, HeartbeatRequest)
    assert isinstance(body, HeartbeatRequest)
    return container.jobs.heartbeat(job_id, body)


@router.post("/jobs/{job_id}/applying")
async def applying(job_id: str, request: Request, container: ContainerDep) -> HeartbeatResponse:
    """The runner starts terraform apply only after this answered without `cancel`."""
    body = await _model(request, HeartbeatRequest)
    assert isinstance(body, HeartbeatRequest)
    return container.jobs.start_apply(job_id, body)


@router.put("/jobs/{job_id}/logs")
async def append_log(job_id: str, request: Request, container: ContainerDep) -> Response:
    try:
        offset = int(request.query_params.get("offset", ""))
    except ValueError as exc:
        raise BadRequest("offset must be an integer") from exc
    data = await request.body()
    if offset < 0 or len(data) > MAX_LOG_PUT:
        raise BadRequest(f"offset must be >= 0 and a log PUT at most {MAX_LOG_PUT} bytes")
    container.jobs.append_log(job_id, offset, data)
    return Response(status_code=204)


@router.post("/jobs/{job_id}/finish")
async def finish(job_id: str, request: Request, container: ContainerDep) -> Response:
    body = await _model(request, FinishRequest)
    assert isinstance(body, FinishRequest)
    run = container.jobs.finish(job_id, body)
    return Response(content=f'{{"run_status": "{run.status}"}}', media_type="application/json")
