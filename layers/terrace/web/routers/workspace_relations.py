"""/api/v2 tags (organization and workspace), key-value tag bindings and remote state consumers."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response

from terrace.domain.errors import Invalid
from terrace.domain.tags import TagRef, all_bindings
from terrace.web import bodies, serializers
from terrace.web.deps import ContainerDep, PrincipalDep
from terrace.web.documents import resource_ids, tag_entries
from terrace.web.jsonapi import JSONAPIResponse, JSONBody, attributes, read_document, respond, respond_page
from terrace.web.routers.workspaces import serialize

router = APIRouter(prefix="/api/v2")


def _data_list(body: Any) -> list[Any]:
    data = body.get("data") if isinstance(body, dict) else None
    if not isinstance(data, list):
        raise Invalid("request body must be {data: [...]}", pointer="/data")
    return data


def _tag_refs(body: Any) -> list[TagRef]:
    return [TagRef(id=tag_id, name=name) for tag_id, name in tag_entries(body)]


def _ids(body: Any, type_: str) -> list[str]:
    return resource_ids(body, type_)


# organization tags -----------------------------------------------------------------------------
@router.get("/organizations/{org}/tags")
def list_organization_tags(
    org: str, request: Request, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    params = request.query_params
    found = container.tags.list_organization(
        principal, org, query=params.get("q") or None, exclude_on=params.get("filter[exclude][taggable][id]")
    )
    return respond_page(request, found, serializers.tag)


@router.delete("/organizations/{org}/tags", openapi_extra=bodies.TAGS)
def delete_organization_tags(org: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep) -> Response:
    container.tags.delete_organization_tags(principal, org, _ids(body, "tags"))
    return Response(status_code=204)


@router.post("/tags/{tag_id}/relationships/workspaces", openapi_extra=bodies.WORKSPACE_REFS)
def add_workspaces_to_tag(tag_id: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep) -> Response:
    container.tags.add_workspaces(principal, tag_id, _ids(body, "workspaces"))
    return Response(status_code=204)


# workspace tags ----------------------------------------------------------------------------------
@router.get("/workspaces/{workspace_id}/relationships/tags")
def list_workspace_tags(
    workspace_id: str, request: Request, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    found = container.tags.of_workspace(principal, container.workspaces.get(principal, workspace_id))
    return respond_page(request, found, serializers.tag)


@router.post("/workspaces/{workspace_id}/relationships/tags", openapi_extra=bodies.TAGS)
def add_tags(workspace_id: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep) -> Response:
    ws = container.workspaces.get(principal, workspace_id)
    container.tags.add_to_workspace(principal, ws, _tag_refs(body))
    return Response(status_code=204)


@router.delete("/workspaces/{workspace_id}/relationships/tags", openapi_extra=bodies.TAGS)
def remove_tags(workspace_id: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep) -> Response:
    ws = container.workspaces.get(principal, workspace_id)
    container.tags.remove_from_workspace(principal, ws, _tag_refs(body))
    return Response(status_code=204)


# tag bindings --------------------------------------------------------------------------------------
@router.get("/workspaces/{workspace_id}/tag-bindings")
def list_tag_bindings(workspace_id: str, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    ws = container.workspaces.get(principal, workspace_id)
    return respond([serializers.tag_binding(ws, k, v) for k, v in container.tags.bindings(principal, ws)])


@router.get("/workspaces/{workspace_id}/effective-tag-bindings")
def list_effective_tag_bindings(workspace_id: str, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    ws = container.workspaces.get(principal, workspace_id)
    bindings = container.tags.effective_bindings(principal, ws)  # its project's, its own over them
    return respond([serializers.tag_binding(ws, k, v, effective=True) for k, v in bindings])


@router.patch("/workspaces/{workspace_id}/tag-bindings", openapi_extra=bodies.TAG_BINDINGS)
def add_tag_bindings(workspace_id: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep) -> Any:
    ws = container.workspaces.get(principal, workspace_id)
    ws = container.tags.add_bindings(principal, ws, _data_list(body))
    return respond([serializers.tag_binding(ws, k, v) for k, v in all_bindings(ws)])


# remote state consumers -------------------------------------------------------------------------
@router.get("/workspaces/{workspace_id}/relationships/remote-state-consumers")
def list_remote_state_consumers(
    workspace_id: str, request: Request, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    ws = container.workspaces.get(principal, workspace_id)
    found = container.remote_state_consumers.consumers(principal, ws)
    return respond_page(request, found, lambda consumer: serialize(container, principal, consumer))


def _change_consumers(
    workspace_id: str, body: Any, container: ContainerDep, principal: PrincipalDep, how: str
) -> Response:
    ws = container.workspaces.get(principal, workspace_id)
    container.remote_state_consumers.change(principal, ws, _ids(body, "workspaces"), how)
    return Response(status_code=204)


@router.post("/workspaces/{workspace_id}/relationships/remote-state-consumers", openapi_extra=bodies.WORKSPACE_REFS)
def add_remote_state_consumers(
    workspace_id: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep
) -> Response:
    return _change_consumers(workspace_id, body, container, principal, "add")


@router.patch("/workspaces/{workspace_id}/relationships/remote-state-consumers", openapi_extra=bodies.WORKSPACE_REFS)
def replace_remote_state_consumers(
    workspace_id: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep
) -> Response:
    return _change_consumers(workspace_id, body, container, principal, "replace")


@router.delete("/workspaces/{workspace_id}/relationships/remote-state-consumers", openapi_extra=bodies.WORKSPACE_REFS)
def remove_remote_state_consumers(
    workspace_id: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep
) -> Response:
    return _change_consumers(workspace_id, body, container, principal, "remove")


# reserved tag keys -------------------------------------------------------------------------------
@router.get("/organizations/{org}/reserved-tag-keys")
def list_reserved_tag_keys(
    org: str, request: Request, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    return respond_page(request, container.reserved_tag_keys.list(principal, org), serializers.reserved_tag_key)


@router.post("/organizations/{org}/reserved-tag-keys")
def create_reserved_tag_key(org: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep) -> Any:
    attrs = attributes(read_document(body, "reserved-tag-keys"))
    return respond(serializers.reserved_tag_key(container.reserved_tag_keys.create(principal, org, attrs)), 201)


def update_reserved_tag_key(rtk_id: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep) -> Any:
    attrs = attributes(read_document(body, "reserved-tag-keys"))
    return respond(serializers.reserved_tag_key(container.reserved_tag_keys.update(principal, rtk_id, attrs)))


def delete_reserved_tag_key(rtk_id: str, container: ContainerDep, principal: PrincipalDep) -> Response:
    container.reserved_tag_keys.delete(principal, rtk_id)
    return Response(status_code=204)


for _prefix in ("reserved-tag-keys", "reserved-tags"):  # go-tfe's path, and the one HCP's API reference names
    router.add_api_route(f"/{_prefix}/{{rtk_id}}", update_reserved_tag_key, methods=["PATCH"],
                         name=f"update_{_prefix}")  # fmt: skip
    router.add_api_route(f"/{_prefix}/{{rtk_id}}", delete_reserved_tag_key, methods=["DELETE"],
                         name=f"delete_{_prefix}")  # fmt: skip
