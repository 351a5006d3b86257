"""/api/v2/admin/terraform-versions (TFE's shape) and /api/v2/admin/opentofu-versions (the same shape, type
`opentofu-versions`): the tool versions of the deployment. 404 to anyone but a site admin."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response

from terrace.bootstrap import Container
from terrace.domain.errors import NotFound
from terrace.domain.principal import Principal
from terrace.domain.tool_versions import ToolVersion
from terrace.web.deps import ContainerDep, PrincipalDep
from terrace.web.jsonapi import JSONAPIResponse, JSONBody, body_attributes, resource, respond, respond_page

router = APIRouter(prefix="/api/v2/admin")
PATHS = {"terraform-versions": "terraform", "opentofu-versions": "opentofu"}


def serialize(record: ToolVersion, usage: int) -> dict[str, Any]:
    kind = "terraform-versions" if record.tool == "terraform" else "opentofu-versions"
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


def _tool(kind: str, container: Container, principal: Principal) -> str:
    container.authz.require_site_admin(principal)
    if kind not in PATHS:
        raise NotFound(f"/api/v2/admin/{kind} not found")
    return PATHS[kind]


def _usage(container: Container, principal: Principal) -> dict[str, int]:
    """How many workspaces ask for each exact version (constraints are not counted)."""
    counts: dict[str, int] = {}
    for ws in container.site_admin.workspaces(principal)[0]:
        counts[ws.terraform_version] = counts.get(ws.terraform_version, 0) + 1
    return counts


@router.get("/{kind}")
def list_versions(kind: str, request: Request, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    tool = _tool(kind, container, principal)
    params = request.query_params
    records = container.tool_versions.list(
        tool, exact=params.get("filter[version]") or "", search=params.get("search[version]") or ""
    )
    usage = _usage(container, principal)
    return respond_page(request, records, lambda r: serialize(r, usage.get(r.version, 0)))


@router.post("/{kind}")
def create_version(kind: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    tool = _tool(kind, container, principal)
    return respond(serialize(container.tool_versions.create(tool, body_attributes(body)), 0), 201)


@router.get("/{kind}/{record_id}")
def read_version(kind: str, record_id: str, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    record = container.tool_versions.get(_tool(kind, container, principal), record_id)
    return respond(serialize(record, _usage(container, principal).get(record.version, 0)))


@router.patch("/{kind}/{record_id}")
def update_version(
    kind: str, record_id: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    record = container.tool_versions.update(_tool(kind, container, principal), record_id, body_attributes(body))
    return respond(serialize(record, _usage(container, principal).get(record.version, 0)))


@router.delete("/{kind}/{record_id}")
def delete_version(kind: str, record_id: str, container: ContainerDep, principal: PrincipalDep) -> Response:
    container.tool_versions.delete(_tool(kind, container, principal), record_id)
    return Response(status_code=204)
