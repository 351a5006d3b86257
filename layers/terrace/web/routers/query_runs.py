"""/api/v2 query runs (HCP Terraform's Query Runs API; `terraform query` through the `cloud` block, terraform 1.14+):
create, read, a workspace's list, cancel and force-cancel. The service is `services/runs/query_runs.py`; the
log is the plan phase's, read through its signed `log-read-url` as a plan's."""

from __future__ import annotations

from contextlib import suppress
from typing import Any

from fastapi import APIRouter, Request, Response

from terrace.bootstrap import Container
from terrace.domain import query_runs as model
from terrace.domain.errors import Forbidden, Invalid, NotFound
from terrace.domain.principal import Principal
from terrace.domain.runs import Run
from terrace.web import run_documents
from terrace.web import run_serializers as rser
from terrace.web.deps import ContainerDep, PrincipalDep
from terrace.web.jsonapi import (
    JSONAPIResponse,
    JSONBody,
    attributes,
    paginate,
    read_document,
    ref,
    relationship_id,
    resource,
    respond,
)

router = APIRouter(prefix="/api/v2")
TYPE = "queries"


def serialize(container: Container, run: Run, users: dict[str, str]) -> dict[str, Any]:
    query_id = model.query_id(run.id)
    created_by = users.get(run.created_by)
    return resource(
        TYPE,
        query_id,
        {
            "created-at": run.created_at,
            "source": run.source,
            "status": model.status(run),
            "status-timestamps": model.status_timestamps(run),
            "terraform-version": run.terraform_version,
            "variables": run.variables,
            "generate-config-out": run.generate_config_out,
            "log-read-url": run_documents.log_url(container, run.plan, run),
            "error-message": run.error_message,
        },
        {
            "workspace": ref("workspaces", run.workspace_id),
            "configuration-version": ref("configuration-versions", run.configuration_version_id),
            "created-by": ref("users", created_by) if created_by else {"data": None},
            "canceled-by": {"data": None},
        },
        links={"self": f"/api/v2/queries/{query_id}"},
    )


def _include_names(request: Request) -> set[str]:
    """HCP's `created_by` and `configuration_version`; go-tfe's tests send `created-by` too."""
    return {name.replace("-", "_") for name in run_documents.include_names(request)}


def respond_queries(
    request: Request, container: Container, principal: Principal, runs: list[Run], *, single: bool, status: int = 200
) -> JSONAPIResponse:
    page, meta, links = paginate(request, runs) if not single else (runs, None, None)
    names = _include_names(request)
    users = run_documents.user_ids(container, [run.created_by for run in page], principal)
    included: dict[tuple[str, str], dict[str, Any]] = {}
    for run in page:
        if "created_by" in names and run.created_by in users:
            user = run_documents.public_user(container, users[run.created_by])
            if user is not None:
                included.setdefault(("users", user["id"]), user)
        if "configuration_version" in names:
            with suppress(NotFound, Forbidden):
                cv = container.configuration_versions.get(principal, run.configuration_version_id)
                included.setdefault(("configuration-versions", cv.id), rser.configuration_version(cv, None))
    documents = [serialize(container, run, users) for run in page]
    document: Any = documents[0] if single else documents
    return respond(document, status, meta=meta, links=links, included=list(included.values()))


@router.post("/queries")
def create_query_run(
    body: JSONBody, request: Request, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    data = read_document(body, TYPE)
    workspace_id = relationship_id(data, "workspace", "workspaces")
    if not workspace_id:
        raise Invalid("relationships.workspace is required", pointer="/data/relationships/workspace")
    cv_id = relationship_id(data, "configuration-version", "configuration-versions")
    run = container.query_runs.create(principal, workspace_id, attributes(data), cv_id)
    return respond_queries(request, container, principal, [run], single=True, status=201)


@router.get("/queries/{query_run_id}")
def read_query_run(
    query_run_id: str, request: Request, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    run = container.query_runs.get(principal, query_run_id)
    return respond_queries(request, container, principal, [run], single=True)


@router.get("/workspaces/{workspace_id}/queries")
def list_query_runs(
    workspace_id: str, request: Request, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    runs = container.query_runs.list(principal, workspace_id)
    return respond_queries(request, container, principal, runs, single=False)


# Clients send no body or any JSON: accepted and ignored, as for a run's actions.
@router.post("/queries/{query_run_id}/actions/cancel")
def cancel_query_run(query_run_id: str, _body: JSONBody, container: ContainerDep, principal: PrincipalDep) -> Response:
    container.query_runs.cancel(principal, query_run_id)
    return Response(status_code=202)


@router.post("/queries/{query_run_id}/actions/force-cancel")
def force_cancel_query_run(
    query_run_id: str, _body: JSONBody, container: ContainerDep, principal: PrincipalDep
) -> Response:
    container.query_runs.force_cancel(principal, query_run_id)
    return Response(status_code=202)
