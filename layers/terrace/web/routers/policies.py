"""/api/v2 policies (`/organizations/:org/policies`, `/policies/:id`, its upload and download) and policy sets
with their relationships, parameters and versions (`/policy-sets/...`, `/policy-set-versions/:id`)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response

from terrace.domain.errors import Invalid
from terrace.web import bodies
from terrace.web import policy_serializers as ser
from terrace.web.deps import ContainerDep, PrincipalDep
from terrace.web.jsonapi import (
    JSONAPIResponse,
    JSONBody,
    RawBody,
    attributes,
    includes,
    read_document,
    respond,
    respond_page,
)

router = APIRouter(prefix="/api/v2")
_ENFORCE = {"type": "array", "items": {"type": "object", "properties": {"path": bodies.STRING, "mode": bodies.STRING}}}
POLICY = bodies.document(
    "policies",
    {"name": bodies.STRING, "description": bodies.STRING, "kind": {"type": "string", "enum": ["opa", "sentinel"]},
     "query": bodies.STRING, "enforcement-level": bodies.STRING, "enforce": _ENFORCE},
)  # fmt: skip
POLICY_SET = bodies.document(
    "policy-sets",
    {"name": bodies.STRING, "description": bodies.STRING, "kind": {"type": "string", "enum": ["opa", "sentinel"]},
     "global": bodies.BOOL, "overridable": bodies.BOOL, "agent-enabled": bodies.BOOL,
     "policy-tool-version": bodies.STRING},
)  # fmt: skip
POLICY_SET_PARAMETER = bodies.document(
    "vars", {"key": bodies.STRING, "value": bodies.STRING, "category": bodies.STRING, "sensitive": bodies.BOOL}
)
_MEMBER = {"type": "object", "properties": {"type": bodies.STRING, "id": bodies.STRING}, "required": ["id"]}
RELATIONSHIP_LIST = bodies.raw_json(
    {"type": "object", "properties": {"data": {"type": "array", "items": _MEMBER}}, "required": ["data"]},
    "application/vnd.api+json",
)
RELATIONS = ("policies", "workspaces", "projects", "workspace-exclusions", "project-exclusions")
SET_INCLUDES = ("policies", "workspaces", "projects", "workspace_exclusions", "project_exclusions")


# policies ---------------------------------------------------------------------------------------------
@router.get("/organizations/{org}/policies")
def list_policies(org: str, request: Request, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    q = request.query_params
    found = container.policies.list(principal, org, q.get("search[name]"), q.get("filter[kind]"))
    counts = container.policy_sets.policy_set_count(principal, org)
    return respond_page(request, found, lambda p: ser.policy(p, counts.get(p.id, 0)))


@router.post("/organizations/{org}/policies", openapi_extra=POLICY)
def create_policy(org: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    data = read_document(body, "policies")
    set_ids = _related_ids(data, "policy-sets")
    created = container.policy_creation.create(principal, org, attributes(data), set_ids)
    return respond(ser.policy(created, len(set_ids)), 201)


@router.get("/policies/{policy_id}")
def read_policy(policy_id: str, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    p = container.policies.get(principal, policy_id)
    return respond(ser.policy(p, container.policy_sets.policy_set_count(principal, p.organization).get(p.id, 0)))


@router.patch("/policies/{policy_id}", openapi_extra=POLICY)
def update_policy(policy_id: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    data = read_document(body, "policies")
    p = container.policies.update(principal, policy_id, attributes(data))
    return respond(ser.policy(p, container.policy_sets.policy_set_count(principal, p.organization).get(p.id, 0)))


@router.delete("/policies/{policy_id}")
def delete_policy(policy_id: str, container: ContainerDep, principal: PrincipalDep) -> Response:
    container.policies.delete(principal, policy_id)
    return Response(status_code=204)


@router.put("/policies/{policy_id}/upload")
def upload_policy(policy_id: str, body: RawBody, container: ContainerDep, principal: PrincipalDep) -> Response:
    container.policies.upload(principal, policy_id, body)
    return Response(status_code=200)


@router.get("/policies/{policy_id}/download")
def download_policy(policy_id: str, container: ContainerDep, principal: PrincipalDep) -> Response:
    return Response(container.policies.download(principal, policy_id), media_type="text/plain; charset=utf-8")


# policy sets ------------------------------------------------------------------------------------------
def _set_document(container: Any, principal: Any, request: Request, sets: list[Any], status: int = 200,
                  page: bool = False) -> JSONAPIResponse:  # fmt: skip
    wanted = includes(request)
    included: list[dict[str, Any]] = []
    seen: set[tuple[str, str]] = set()

    def add(doc: dict[str, Any]) -> None:
        if (doc["type"], doc["id"]) not in seen:
            seen.add((doc["type"], doc["id"]))
            included.append(doc)

    for s in sets:
        for relation in SET_INCLUDES:
            if relation not in wanted:
                continue
            for member in container.policy_sets.members(s, relation):
                if relation in ("projects", "project_exclusions"):
                    add(ser.project_brief(member))
                elif relation == "policies":
                    add(ser.policy(member, 0))
                else:
                    add(ser.workspace_brief(member))
        for relation, version_id in (
            ("current_version", s.current_version_id),
            ("newest_version", s.newest_version_id),
        ):
            if relation in wanted and version_id:
                v = container.policy_set_versions.get(principal, version_id)
                add(ser.version(v, container.policy_set_versions.upload_url(principal, v)))
    if page:
        return respond_page(request, sets, ser.policy_set, included=included)
    return respond(ser.policy_set(sets[0]), status, included=included)


@router.get("/organizations/{org}/policy-sets")
def list_policy_sets(org: str, request: Request, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    q = request.query_params
    found = container.policy_sets.list(principal, org, q.get("search[name]"), q.get("filter[kind]"))
    return _set_document(container, principal, request, found, page=True)


def _related_ids(data: dict[str, Any], relation: str) -> list[str]:
    """The ids of a to-many relationship of a request document (none when it is absent)."""
    relationships = data.get("relationships") or {}
    rel = relationships.get(relation) if isinstance(relationships, dict) else None
    if rel is None:
        return []
    items = rel.get("data") if isinstance(rel, dict) else None
    if not isinstance(items, list) or not all(isinstance(i, dict) and isinstance(i.get("id"), str) for i in items):
        raise Invalid(
            f"relationship {relation} must be {{data: [{{type, id}}]}}", pointer=f"/data/relationships/{relation}"
        )
    return list(dict.fromkeys(i["id"] for i in items))


def _members(data: dict[str, Any]) -> dict[str, list[str]]:
    relationships = data.get("relationships") or {}
    return {r: _related_ids(data, r) for r in RELATIONS if isinstance(relationships, dict) and r in relationships}


@router.post("/organizations/{org}/policy-sets", openapi_extra=POLICY_SET)
def create_policy_set(
    org: str, request: Request, body: JSONBody, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    data = read_document(body, "policy-sets")
    created = container.policy_sets.create(principal, org, attributes(data), _members(data))
    return _set_document(container, principal, request, [created], 201)


@router.get("/policy-sets/{set_id}")
def read_policy_set(set_id: str, request: Request, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    return _set_document(container, principal, request, [container.policy_sets.get(principal, set_id)])


@router.patch("/policy-sets/{set_id}", openapi_extra=POLICY_SET)
def update_policy_set(
    set_id: str, request: Request, body: JSONBody, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    data = read_document(body, "policy-sets")
    updated = container.policy_sets.update(principal, set_id, attributes(data))
    return _set_document(container, principal, request, [updated])


@router.delete("/policy-sets/{set_id}")
def delete_policy_set(set_id: str, container: ContainerDep, principal: PrincipalDep) -> Response:
    container.policy_sets.delete(principal, set_id)
    return Response(status_code=204)


def _relationship_ids(body: Any) -> Any:
    if not isinstance(body, dict) or not isinstance(body.get("data"), list):
        raise Invalid("request body must be {data: [{type, id}]}", pointer="/data")
    items = body["data"]
    if not all(isinstance(i, dict) and isinstance(i.get("id"), str) for i in items):
        raise Invalid("each member must be {type, id}", pointer="/data")
    return [i["id"] for i in items]


@router.post("/policy-sets/{set_id}/tag-selectors")
def add_tag_selectors(set_id: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep) -> Response:
    """go-tfe's `{data: [{tag-key, tag-value, is-exclude}]}`: workspaces with a matching tag are included (or
    excluded); `DELETE` takes the same body."""
    container.policy_sets.change_tag_selectors(principal, set_id, _selectors(body), add=True)
    return Response(status_code=204)


@router.delete("/policy-sets/{set_id}/tag-selectors")
def remove_tag_selectors(set_id: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep) -> Response:
    container.policy_sets.change_tag_selectors(principal, set_id, _selectors(body), add=False)
    return Response(status_code=204)


def _selectors(body: Any) -> Any:
    return body.get("data") if isinstance(body, dict) else None


@router.post("/policy-sets/{set_id}/relationships/{relation}", openapi_extra=RELATIONSHIP_LIST)
def add_members(
    set_id: str, relation: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep
) -> Response:
    if relation not in RELATIONS:
        raise Invalid(f"unknown relationship {relation}")
    container.policy_sets.change_members(principal, set_id, relation, _relationship_ids(body), add=True)
    return Response(status_code=204)


@router.delete("/policy-sets/{set_id}/relationships/{relation}", openapi_extra=RELATIONSHIP_LIST)
def remove_members(
    set_id: str, relation: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep
) -> Response:
    if relation not in RELATIONS:
        raise Invalid(f"unknown relationship {relation}")
    container.policy_sets.change_members(principal, set_id, relation, _relationship_ids(body), add=False)
    return Response(status_code=204)


# parameters -------------------------------------------------------------------------------------------
@router.get("/policy-sets/{set_id}/parameters")
def list_parameters(set_id: str, request: Request, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    return respond_page(request, container.policy_set_parameters.list(principal, set_id), ser.parameter)


@router.post("/policy-sets/{set_id}/parameters", openapi_extra=POLICY_SET_PARAMETER)
def create_parameter(set_id: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    data = read_document(body, "vars")
    return respond(ser.parameter(container.policy_set_parameters.create(principal, set_id, attributes(data))), 201)


@router.get("/policy-sets/{set_id}/parameters/{param_id}")
def read_parameter(set_id: str, param_id: str, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    return respond(ser.parameter(container.policy_set_parameters.get(principal, set_id, param_id)))


@router.patch("/policy-sets/{set_id}/parameters/{param_id}", openapi_extra=POLICY_SET_PARAMETER)
def update_parameter(
    set_id: str, param_id: str, body: JSONBody, container: ContainerDep, principal: PrincipalDep
) -> JSONAPIResponse:
    data = read_document(body, "vars")
    return respond(ser.parameter(container.policy_set_parameters.update(principal, set_id, param_id, attributes(data))))


@router.delete("/policy-sets/{set_id}/parameters/{param_id}")
def delete_parameter(set_id: str, param_id: str, container: ContainerDep, principal: PrincipalDep) -> Response:
    container.policy_set_parameters.delete(principal, set_id, param_id)
    return Response(status_code=204)


# versions ---------------------------------------------------------------------------------------------
@router.post("/policy-sets/{set_id}/versions")
def create_version(set_id: str, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    v = container.policy_set_versions.create(principal, set_id)
    return respond(ser.version(v, container.policy_set_versions.upload_url(principal, v)), 201)


@router.get("/policy-set-versions/{version_id}")
def read_version(version_id: str, container: ContainerDep, principal: PrincipalDep) -> JSONAPIResponse:
    v = container.policy_set_versions.get(principal, version_id)
    return respond(ser.version(v, container.policy_set_versions.upload_url(principal, v)))
