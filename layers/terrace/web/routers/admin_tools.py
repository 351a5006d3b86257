"""/api/v2/admin/terraform-versions (TFE's shape), /api/v2/admin/opentofu-versions (the same shape, type
`opentofu-versions`) and the policy tools' opa-versions and sentinel-versions: the tool versions of the deployment.
404 to anyone but a site admin."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response

from terrace.domain.tool_versions import CATALOGS, ToolVersion
from terrace.web.deps import ContainerDep, PrincipalDep
from terrace.web.jsonapi import JSONAPIResponse, JSONBody, body_attributes, resource, respond, respond_page

router = APIRouter(prefix="/api/v2/admin")


def serialize(record: ToolVersion, usage: int) -> dict[str, Any]:
    kind = next(path for path, tool in CATALOGS.items() if tool == record.tool)
    return resource(
        kind,
        record.id,
        {
            "version": record.version,
            "url": record.url,
            "sha": record.sha,
            "official": record.official,
            "enabled": record.enabled,
            "beta": record.beta,
            "deprecated": record.deprecated,
            "deprecated-reason": record.deprecated_reason,
            "usage": usage,
            "usable": record.usable,  # Terrace: a runner holds this binary (runs may use it)
            "created-at": record.created_at,
            "archs": record.archs,
        },
        links={"self": f"/api/v2/admin/{kind}/{record.id}"},
    )


@router.get("/{kind}")
def list_versions(kind: str, request: Request, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    params = request.query_params
    records, usage = container.tool_version_admin.list(
        principal, kind, exact=params.get("filter[version]") or "", search=params.get("search[version]") or ""
    )
    return respond_page(request, records, lambda r: serialize(r, usage.get(r.version, 0)))


@router.post("/{kind}")
def create_version(kind: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    return respond(serialize(container.tool_version_admin.create(principal, kind, body_attributes(body)), 0), 201)


@router.get("/{kind}/{record_id}")
def read_version(kind: str, record_id: str, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    return respond(serialize(*container.tool_version_admin.get(principal, kind, record_id)))


@router.patch("/{kind}/{record_id}")
def update_version(
    kind: str, record_id: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    return respond(serialize(*container.tool_version_admin.update(principal, kind, record_id, body_attributes(body))))


@router.delete("/{kind}/{record_id}")
def delete_version(kind: str, record_id: str, container: ContainerDep, principal: PrincipalDep) -> Response:
    container.tool_version_admin.delete(principal, kind, record_id)
    return Response(status_code=204)
