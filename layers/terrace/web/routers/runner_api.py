"""/api/runner: the runner protocol (see terrace.domain.jobs). Authenticated by a runner token, which
works the jobs of its one organization only (decided in services/access/authz.py); `enroll` by the runner's
single-use enrollment code, which it exchanges for that token."""

from __future__ import annotations

from typing import Annotated, Any

import anyio.from_thread
from fastapi import APIRouter, Depends, Query, Request, Response

from terrace.domain.errors import BadRequest, Invalid
from terrace.domain.hyok_jobs import HyokJobKey, HyokKeyRequest, HyokPlanKeyRequest, SealedPlanKey
from terrace.domain.jobs import (
    BEAT_HEADER,
    HAND_OVER_HEADER,
    EnrollRequest,
    EnrollResponse,
    FinishRequest,
    FinishResponse,
    HeartbeatRequest,
    HeartbeatResponse,
    HeldRuns,
    JobSpec,
    NextRequest,
    UploadUrls,
    beat_header,
)
from terrace.domain.principal import PrincipalKind
from terrace.web.deps import ContainerDep, PrincipalDep
from terrace.web.jsonapi import JSONBody, RawBody

MAX_LOG_PUT = 1024 * 1024
MAX_WAIT_S = 20.0

router = APIRouter(prefix="/api/runner")


def _model(body: Any, model: type) -> object:
    try:
        return model.model_validate(body or {})  # type: ignore[attr-defined]
    except Exception as exc:
        raise Invalid(f"invalid {model.__name__}: {exc}") from exc


def _next_body(raw: JSONBody) -> NextRequest:
    body = _model(raw, NextRequest)
    assert isinstance(body, NextRequest)
    return body


def _heartbeat_body(raw: JSONBody) -> HeartbeatRequest:
    body = _model(raw, HeartbeatRequest)
    assert isinstance(body, HeartbeatRequest)
    return body


def _enroll_body(raw: JSONBody) -> EnrollRequest:
    body = _model(raw, EnrollRequest)
    assert isinstance(body, EnrollRequest)
    return body


@router.post("/enroll")
def enroll(body: Annotated[EnrollRequest, Depends(_enroll_body)], container: ContainerDep) -> EnrollResponse:
    """A runner's token, once, before its enrollment expires: for a local runner's code, or for a task's proof that
    it is the task named (`domain/runner_identity.py`)."""
    enrollments = container.runner_enrollments
    if body.identity is not None and body.task_arn:
        enrollment, issued = enrollments.exchange_proven(body.task_arn, body.identity)
    elif body.code and body.identity is None:
        enrollment, issued = enrollments.exchange(body.code)
    else:
        raise Invalid("an enrollment is a code, or a task ARN with its identity proof")
    return EnrollResponse(
        token=issued.secret,
        token_id=issued.token.id,
        organization=enrollment.organization,
        runner_id=enrollment.runner_id,
    )


@router.post("/jobs/next", response_model=None)
def next_job(
    request: Request,
    container: ContainerDep,
    principal: PrincipalDep,
    body: Annotated[NextRequest, Depends(_next_body)],
    wait: Annotated[float, Query(ge=0, le=MAX_WAIT_S)] = 0.0,
) -> JobSpec | Response:
    """Long-poll: the next job of the runner's organization, claimed for it (200), or 204 after `wait` s; a
    runner that has `served` jobs gets a 204 with `Terrace-Hand-Over` at once when it should exit so that another
    organization gets its slot (`services/runs/runner_turns.py`)."""

    def still_asking() -> bool:  # a runner stopped or killed during its wait must not be handed a job
        return not anyio.from_thread.run(request.is_disconnected)

    if body.served and principal.kind is PrincipalKind.RUNNER and principal.organization:
        if container.runner_turns.hand_over(principal.organization):  # others wait: its slot goes to them
            return Response(status_code=204, headers={HAND_OVER_HEADER: "1"})
    spec = container.jobs.next(principal, body.runner_id, wait_s=wait, still_asking=still_asking, lanes=body.lanes)
    return spec if spec is not None else Response(status_code=204)


@router.post("/jobs/{job_id}/heartbeat")
def heartbeat(
    job_id: str,
    body: Annotated[HeartbeatRequest, Depends(_heartbeat_body)],
    container: ContainerDep,
    principal: PrincipalDep,
) -> HeartbeatResponse:
    return container.jobs.heartbeat(principal, job_id, body)


@router.post("/jobs/{job_id}/applying")
def applying(
    job_id: str,
    body: Annotated[HeartbeatRequest, Depends(_heartbeat_body)],
    container: ContainerDep,
    principal: PrincipalDep,
) -> HeartbeatResponse:
    """The runner starts terraform apply only after this answered without `cancel`."""
    return container.jobs.start_apply(principal, job_id, body)


@router.post("/jobs/{job_id}/release")
def release(
    job_id: str,
    body: Annotated[HeartbeatRequest, Depends(_heartbeat_body)],
    container: ContainerDep,
    principal: PrincipalDep,
) -> dict[str, str]:
    """A stopping runner or agent hands its job back: retried elsewhere under the lost-attempt rules."""
    return {"run_status": container.jobs.release(principal, job_id, body)}


@router.put("/jobs/{job_id}/logs")
def append_log(
    job_id: str, request: Request, data: RawBody, container: ContainerDep, principal: PrincipalDep
) -> Response:
    try:
        offset = int(request.query_params.get("offset", ""))
    except ValueError as exc:
        raise BadRequest("offset must be an integer") from exc
    if offset < 0 or len(data) > MAX_LOG_PUT:
        raise BadRequest(f"offset must be >= 0 and a log PUT at most {MAX_LOG_PUT} bytes")
    answer = container.jobs.append_log(principal, job_id, offset, data)
    return Response(status_code=204, headers={BEAT_HEADER: beat_header(answer)})


@router.post("/jobs/{job_id}/upload-urls")
def upload_urls(job_id: str, raw: JSONBody, container: ContainerDep, principal: PrincipalDep) -> UploadUrls:
    """The running plan's upload URLs, signed now: the runner asks just before each upload."""
    body = _heartbeat_body(raw)
    return container.job_uploads.upload_urls(principal, job_id, body.runner_id)


@router.post("/jobs/{job_id}/hyok-key")
def hyok_key(job_id: str, raw: JSONBody, container: ContainerDep, principal: PrincipalDep) -> HyokJobKey:
    """How the agent working a Hold Your Own Key workspace's job reaches its customer's key, and the current state's
    ciphertext and wrapped data key (`domain/hyok_jobs.py`)."""
    body = _model(raw, HyokKeyRequest)
    assert isinstance(body, HyokKeyRequest)
    return container.hyok_jobs.key_for(principal, job_id, body.runner_id)


@router.post("/jobs/{job_id}/hyok-plan-key")
def hyok_plan_key(job_id: str, raw: JSONBody, container: ContainerDep, principal: PrincipalDep) -> SealedPlanKey:
    """The wrapped data key a Hold Your Own Key plan job sealed its saved plan with, recorded on its plan."""
    body = _model(raw, HyokPlanKeyRequest)
    assert isinstance(body, HyokPlanKeyRequest)
    return container.hyok_jobs.record_plan_key(principal, job_id, body)


@router.post("/jobs/{job_id}/finish")
def finish(job_id: str, raw: JSONBody, container: ContainerDep, principal: PrincipalDep) -> FinishResponse:
    """The run's status; with `keep_for_apply`, maybe the same run's apply claimed for this runner."""
    body = _model(raw, FinishRequest)
    assert isinstance(body, FinishRequest)
    return container.jobs.finish_and_continue(principal, job_id, body)


@router.post("/held-runs")
def held_runs(raw: JSONBody, container: ContainerDep, principal: PrincipalDep) -> HeldRuns:
    """Which of the runs whose plan folder this runner holds it may still apply (it drops the others)."""
    body = _model(raw, HeldRuns)
    assert isinstance(body, HeldRuns)
    kept = container.jobs.held_runs(principal, body.runner_id, body.run_ids)
    return HeldRuns(runner_id=body.runner_id, run_ids=kept)
