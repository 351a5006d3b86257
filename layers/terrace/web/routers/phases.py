"""/api/v2 plans and applies, their logs (signed log-read URLs) and the plan JSON."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse, RedirectResponse

from terrace.bootstrap import Container
from terrace.domain.principal import Principal
from terrace.domain.runs import PhaseState, Run
from terrace.services.runs.logs import read_window
from terrace.web import run_documents
from terrace.web import run_serializers as rser
from terrace.web.deps import ContainerDep, PrincipalDep
from terrace.web.jsonapi import respond

router = APIRouter(prefix="/api/v2")


def _log_url(container: Container, phase: PhaseState, run: Run) -> str | None:
    return run_documents.log_url(container, phase, run)


def _run_of(container: Container, principal: Principal, phase_id: str, prefix: str) -> Run:
    return container.plans.run_of(principal, phase_id, prefix)


@router.get("/plans/{plan_id}")
def read_plan(plan_id: str, container: ContainerDep, principal: PrincipalDep) -> Response:
    run = _run_of(container, principal, plan_id, "plan-")
    return respond(rser.plan(run, _log_url(container, run.plan, run)))


@router.get("/applies/{apply_id}")
def read_apply(apply_id: str, container: ContainerDep, principal: PrincipalDep) -> Response:
    run = _run_of(container, principal, apply_id, "apply-")
    return respond(rser.apply(run, _log_url(container, run.apply, run)))


@router.get("/runs/{run_id}/plan")
def read_run_plan(run_id: str, container: ContainerDep, principal: PrincipalDep) -> Response:
    run = container.runs.get(principal, run_id)
    return respond(rser.plan(run, _log_url(container, run.plan, run)))


@router.get("/runs/{run_id}/apply")
def read_run_apply(run_id: str, container: ContainerDep, principal: PrincipalDep) -> Response:
    run = container.runs.get(principal, run_id)
    return respond(rser.apply(run, _log_url(container, run.apply, run)))


@router.get("/plans/{plan_id}/json-output")
def plan_json(plan_id: str, container: ContainerDep, principal: PrincipalDep) -> Response:
    url = container.plans.json_url(principal, plan_id, container.settings.presign_ttl_s)
    return RedirectResponse(url, status_code=307)


@router.get("/plans/{plan_id}/sanitized-plan")
def sanitized_plan(plan_id: str, container: ContainerDep, principal: PrincipalDep) -> Response:
    """A Hold Your Own Key plan's sanitized JSON plan (what changes and how, no value: the agent sanitized it)."""
    url = container.plans.sanitized_url(principal, plan_id, container.settings.presign_ttl_s)
    return RedirectResponse(url, status_code=307)


@router.get("/plans/{plan_id}/json-output-redacted")
def plan_json_redacted(plan_id: str, container: ContainerDep, principal: PrincipalDep) -> Response:
    redacted = container.plans.redacted_output(principal, plan_id, container.settings.presign_ttl_s)
    if redacted.url is not None:  # a large plan: straight from storage, past Lambda's 6 MB
        return RedirectResponse(redacted.url, status_code=307)
    return JSONResponse(redacted.document)


@router.get("/logs/{phase_id}/{expires}/{signature}")
def read_log(phase_id: str, expires: int, signature: str, request: Request, container: ContainerDep) -> Response:
    """No Authorization here (clients send none): the path carries an HMAC signature and expiry."""
    offset, limit = read_window(request.query_params.get("offset"), request.query_params.get("limit"))
    data = container.logs.read_signed(phase_id, expires, signature, offset, limit)
    return Response(data, media_type="text/plain")
