"""/api/v2 plan exports (HCP's `plan-exports`): a finished plan's data as a Sentinel mock bundle. Create, read,
delete, and the download: a redirect to the bundle's presigned URL. The service is `services/runs/plan_exports.py`."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Response
from fastapi.responses import RedirectResponse

from terrace.domain.plan_exports import PlanExport
from terrace.web.deps import ContainerDep, PrincipalDep
from terrace.web.jsonapi import JSONAPIResponse, JSONBody, attributes, read_document, relationship_id, resource, respond

router = APIRouter(prefix="/api/v2")
TYPE = "plan-exports"


def serialize(export: PlanExport) -> dict[str, Any]:
    return resource(
        TYPE,
        export.id,
        {"data-type": export.data_type, "status": export.status, "status-timestamps": export.status_timestamps},
        links={"self": f"/api/v2/plan-exports/{export.id}"},
    )


@router.post("/plan-exports")
def create_plan_export(body: JSONBody, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    data = read_document(body, TYPE)
    plan_id = relationship_id(data, "plan", "plans")
    return respond(serialize(container.plan_exports.create(principal, attributes(data), plan_id)), 201)


@router.get("/plan-exports/{export_id}")
def read_plan_export(export_id: str, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    return respond(serialize(container.plan_exports.get(principal, export_id)))


@router.delete("/plan-exports/{export_id}")
def delete_plan_export(export_id: str, container: ContainerDep, principal: PrincipalDep) -> Response:
    container.plan_exports.delete(principal, export_id)
    return Response(status_code=204)


@router.get("/plan-exports/{export_id}/download")
def download_plan_export(export_id: str, container: ContainerDep, principal: PrincipalDep) -> Response:
    url = container.plan_exports.download_url(principal, export_id, container.settings.presign_ttl_s)
    return RedirectResponse(url, status_code=302)
