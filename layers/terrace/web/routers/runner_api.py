"""/api/runner: the runner protocol (see terrace.domain.jobs). Authenticated by a runner token, which
works the jobs of its one organization only (decided in services/authz.py)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request, Response

from terrace.domain.errors import BadRequest, Invalid
from terrace.domain.jobs import FinishRequest, HeartbeatRequest, HeartbeatResponse, JobSpec, NextRequest
from terrace.web.deps import ContainerDep, PrincipalDep
from terrace.web.jsonapi import read_json

MAX_LOG_PUT = 1024 * 1024
MAX_WAIT_S = 20.0

router = APIRouter(prefix="/api/runner")


async def _model(request: Request, model: type) -> object:
    body = await read_json(request)
    try:
        return model.model_validate(body or {})  # type: ignore[attr-defined]
    except Exception as exc:
        raise Invalid(f"invalid {model.__name__}: {exc}") from exc


async def _next_body(request: Request) -> NextRequest:
    body = await _model(request, NextRequest)
    assert isinstance(body, NextRequest)
    return body


@router.post("/jobs/next", response_model=None)
def next_job(
    container: ContainerDep,
    principal: PrincipalDep,
    body: Annotated[NextRequest, Depends(_next_body)],
    wait: Annotated[float, Query(ge=0, le=MAX_WAIT_S)] = 0.0,
) -> JobSpec | Response:
    """Long-poll: the next job of the runner's organization, claimed for it (200), or 204 after `wait` s."""
    spec = container.jobs.next(principal, body.runner_id, wait_s=wait)
    return spec if spec is not None else Response(status_code=204)


@router.post("/jobs/{job_id}/heartbeat")
async def heartbeat(
    job_id: str, request: Request, container: ContainerDep, principal: PrincipalDep
) -> HeartbeatResponse:
    body = await _model(request, HeartbeatRequest)
    assert isinstance(body, HeartbeatRequest)
    return container.jobs.heartbeat(principal, job_id, body)


@router.post("/jobs/{job_id}/applying")
async def applying(
    job_id: str, request: Request, container: ContainerDep, principal: PrincipalDep
) -> HeartbeatResponse:
    """The runner starts terraform apply only after this answered without `cancel`."""
    body = await _model(request, HeartbeatRequest)
    assert isinstance(body, HeartbeatRequest)
    return container.jobs.start_apply(principal, job_id, body)


@router.put("/jobs/{job_id}/logs")
async def append_log(job_id: str, request: Request, container: ContainerDep, principal: PrincipalDep) -> Response:
    try:
        offset = int(request.query_params.get("offset", ""))
    except ValueError as exc:
        raise BadRequest("offset must be an integer") from exc
    data = await request.body()
    if offset < 0 or len(data) > MAX_LOG_PUT:
        raise BadRequest(f"offset must be >= 0 and a log PUT at most {MAX_LOG_PUT} bytes")
    container.jobs.append_log(principal, job_id, offset, data)
    return Response(status_code=204)


@router.post("/jobs/{job_id}/finish")
async def finish(job_id: str, request: Request, container: ContainerDep, principal: PrincipalDep) -> Response:
    body = await _model(request, FinishRequest)
    assert isinstance(body, FinishRequest)
    run = container.jobs.finish(principal, job_id, body)
    return Response(content=f'{{"run_status": "{run.status}"}}', media_type="application/json")
