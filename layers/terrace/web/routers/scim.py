"""/scim/v2: SCIM 2.0 (RFC 7644) for an identity provider (Okta, Entra ID, ...): Users, Groups and the service's
fixed documents. A SCIM token (`admin/scim-tokens`) is the only credential accepted here, and it is accepted
nowhere else. Domain errors become SCIM error documents (`web/scim_errors.py`), here and before a route runs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request, Response
from fastapi.responses import JSONResponse

from terrace.domain import errors, limits
from terrace.domain import scim as model
from terrace.domain.principal import Principal
from terrace.web import scim_documents as docs
from terrace.web.audit_trail import note_actor
from terrace.web.deps import ContainerDep
from terrace.web.jsonapi import RawBody
from terrace.web.rate_limit import bearer_of
from terrace.web.scim_errors import MEDIA, scim_error, scim_response

router = APIRouter(prefix="/scim/v2")


def caller(request: Request, container: ContainerDep) -> Principal:
    principal = container.accounts.authenticate_scim(bearer_of(request.headers.get("authorization", "")) or "")
    note_actor(request, principal)  # the request's audit event names the SCIM token that provisioned
    return principal


def scim_body(raw: RawBody) -> Any:
    try:
        return limits.parse_json(raw or b"null", "SCIM request body")
    except errors.Invalid as exc:  # not JSON at all: RFC 7644's invalidSyntax
        raise model.InvalidSyntax(exc.detail) from exc


ScimCaller = Annotated[Principal, Depends(caller)]
ScimBody = Annotated[Any, Depends(scim_body)]


def answer(work: Callable[[], Any], status: int = 200, read: Request | None = None) -> Response:
    """`work`'s result as SCIM JSON with its ETag; for a `read` whose If-None-Match names that version, 304."""
    try:
        result = work()
    except errors.TerraceError as exc:
        return scim_error(exc)
    if result is None:
        return Response(status_code=204)
    version = (result.get("meta") or {}).get("version") if isinstance(result, dict) else None
    known = (read.headers.get("if-none-match") or "") if read is not None else ""
    if version and (known.strip() == "*" or version in [v.strip() for v in known.split(",")]):
        return Response(status_code=304, headers={"ETag": version})
    return scim_response(result, status, version)


def _if_match(request: Request, current: dict[str, Any]) -> None:
    wanted = request.headers.get("if-match")
    if wanted and wanted.strip() != "*" and current["meta"]["version"] not in [w.strip() for w in wanted.split(",")]:
        raise errors.PreconditionFailed("the resource changed since that version (If-Match)")


def guarded(request: Request, read: Callable[[], dict[str, Any]], change: Callable[[], Any]) -> Callable[[], Any]:
    """`change`, once the resource as `read` still has the version the request's If-Match names (when it names one)."""

    def work() -> Any:
        _if_match(request, read())
        return change()

    return work


ALWAYS = {"id", "schemas"}


def _names(raw: Any) -> set[str]:
    items = raw if isinstance(raw, list) else str(raw or "").split(",")
    return {str(i).strip().split(":")[-1].split(".")[0].lower() for i in items if str(i).strip()}


def projected(resource: dict[str, Any], attributes: Any, excluded: Any) -> dict[str, Any]:
    """RFC 7644 3.4.2.5: only `attributes` (and id, schemas), or all but `excludedAttributes`."""
    wanted, dropped = _names(attributes), _names(excluded)
    if wanted:
        return {k: v for k, v in resource.items() if k in ALWAYS or k.lower() in wanted}
    return {k: v for k, v in resource.items() if k in ALWAYS or k.lower() not in dropped}


def shaped(result: dict[str, Any], attributes: Any, excluded: Any) -> dict[str, Any]:
    if "Resources" in result:
        return {**result, "Resources": [projected(r, attributes, excluded) for r in result["Resources"]]}
    return projected(result, attributes, excluded)


def _excluded(request: Request) -> bool:
    return "members" in (request.query_params.get("excludedAttributes") or "").split(",")


# documents -----------------------------------------------------------------------------------------------------
@router.get("/ServiceProviderConfig")
def service_provider_config(container: ContainerDep, _caller: ScimCaller) -> Response:
    return scim_response(docs.service_provider_config(container.settings.public_url.rstrip("/")))


@router.get("/ResourceTypes")
def resource_types(container: ContainerDep, _caller: ScimCaller) -> Response:
    found = docs.resource_types(container.settings.public_url.rstrip("/"))
    return scim_response(model.list_response(found, len(found), 1))


@router.get("/Schemas")
def schemas(container: ContainerDep, _caller: ScimCaller) -> Response:
    found = docs.schemas(container.settings.public_url.rstrip("/"))
    return scim_response(model.list_response(found, len(found), 1))


@router.get("/ResourceTypes/{name}")
def resource_type(name: str, container: ContainerDep, _caller: ScimCaller) -> Response:
    found = [t for t in docs.resource_types(container.settings.public_url.rstrip("/")) if t["id"] == name]
    return scim_response(found[0]) if found else scim_error(errors.NotFound(f"no resource type {name}"))


@router.get("/Schemas/{schema_id}")
def schema(schema_id: str, container: ContainerDep, _caller: ScimCaller) -> Response:
    found = [t for t in docs.schemas(container.settings.public_url.rstrip("/")) if t["id"] == schema_id]
    return scim_response(found[0]) if found else scim_error(errors.NotFound(f"no schema {schema_id}"))


# searches (RFC 7644 3.4.3) -------------------------------------------------------------------------------------
def _search(container: Any, kinds: tuple[str, ...], body: Any) -> dict[str, Any]:
    body = model.bounded(body)
    start, count = body.get("startIndex"), body.get("count")
    start_s, count_s = (None if start is None else str(start)), (None if count is None else str(count))
    found: list[dict[str, Any]] = []
    for kind in kinds:
        service = container.scim_users if kind == "User" else container.scim_groups
        found += service.list(body.get("filter"), None, str(model.COUNT_MAX * 100))["Resources"]
    items, first, _size = model.page(found, start_s, count_s)
    return shaped(model.list_response(items, len(found), first), body.get("attributes"),
                  body.get("excludedAttributes"))  # fmt: skip


@router.post("/.search")
def search_all(body: ScimBody, container: ContainerDep, _caller: ScimCaller) -> Response:
    return answer(lambda: _search(container, ("User", "Group"), body))


@router.post("/Users/.search")
def search_users(body: ScimBody, container: ContainerDep, _caller: ScimCaller) -> Response:
    return answer(lambda: _search(container, ("User",), body))


@router.post("/Groups/.search")
def search_groups(body: ScimBody, container: ContainerDep, _caller: ScimCaller) -> Response:
    return answer(lambda: _search(container, ("Group",), body))


# users ---------------------------------------------------------------------------------------------------------
@router.get("/Users")
def list_users(request: Request, container: ContainerDep, _caller: ScimCaller) -> Response:
    q = request.query_params
    found = lambda: container.scim_users.list(q.get("filter"), q.get("startIndex"), q.get("count"))  # noqa: E731
    return answer(lambda: shaped(found(), q.get("attributes"), q.get("excludedAttributes")))


@router.post("/Users")
def create_user(body: ScimBody, container: ContainerDep, _caller: ScimCaller) -> Response:
    return answer(lambda: container.scim_users.create(body), 201)


@router.get("/Users/{scim_id}")
def read_user(scim_id: str, request: Request, container: ContainerDep, _caller: ScimCaller) -> Response:
    q = request.query_params
    found = lambda: container.scim_users.get(scim_id)  # noqa: E731
    return answer(lambda: shaped(found(), q.get("attributes"), q.get("excludedAttributes")), read=request)


@router.put("/Users/{scim_id}")
def replace_user(scim_id: str, request: Request, body: ScimBody, container: ContainerDep, _caller: ScimCaller
                 ) -> Response:  # fmt: skip
    users = container.scim_users
    return answer(guarded(request, lambda: users.get(scim_id), lambda: users.replace(scim_id, body)))


@router.patch("/Users/{scim_id}")
def patch_user(scim_id: str, request: Request, body: ScimBody, container: ContainerDep, _caller: ScimCaller
               ) -> Response:  # fmt: skip
    users = container.scim_users
    return answer(guarded(request, lambda: users.get(scim_id), lambda: users.patch(scim_id, body)))


@router.delete("/Users/{scim_id}")
def delete_user(scim_id: str, request: Request, container: ContainerDep, _caller: ScimCaller) -> Response:
    users = container.scim_users
    return answer(guarded(request, lambda: users.get(scim_id), lambda: users.delete(scim_id)))


# groups --------------------------------------------------------------------------------------------------------
@router.get("/Groups")
def list_groups(request: Request, container: ContainerDep, _caller: ScimCaller) -> Response:
    q = request.query_params
    found = lambda: container.scim_groups.list(q.get("filter"), q.get("startIndex"), q.get("count"),  # noqa: E731
                                               _excluded(request))  # fmt: skip
    return answer(lambda: shaped(found(), q.get("attributes"), q.get("excludedAttributes")))


@router.post("/Groups")
def create_group(body: ScimBody, container: ContainerDep, _caller: ScimCaller) -> Response:
    return answer(lambda: container.scim_groups.create(body), 201)


@router.get("/Groups/{scim_id}")
def read_group(scim_id: str, request: Request, container: ContainerDep, _caller: ScimCaller) -> Response:
    q = request.query_params
    found = lambda: container.scim_groups.get(scim_id, _excluded(request))  # noqa: E731
    return answer(lambda: shaped(found(), q.get("attributes"), q.get("excludedAttributes")), read=request)


@router.put("/Groups/{scim_id}")
def replace_group(scim_id: str, request: Request, body: ScimBody, container: ContainerDep, _caller: ScimCaller
                  ) -> Response:  # fmt: skip
    groups = container.scim_groups
    return answer(guarded(request, lambda: groups.get(scim_id), lambda: groups.replace(scim_id, body)))


@router.patch("/Groups/{scim_id}")
def patch_group(scim_id: str, request: Request, body: ScimBody, container: ContainerDep, _caller: ScimCaller
                ) -> Response:  # fmt: skip
    groups = container.scim_groups
    return answer(guarded(request, lambda: groups.get(scim_id), lambda: groups.patch(scim_id, body)))


@router.delete("/Groups/{scim_id}")
def delete_group(scim_id: str, request: Request, container: ContainerDep, _caller: ScimCaller) -> Response:
    groups = container.scim_groups
    return answer(guarded(request, lambda: groups.get(scim_id), lambda: groups.delete(scim_id)))


# anything else -------------------------------------------------------------------------------------------------
FIXED = ("ServiceProviderConfig", "ResourceTypes", "Schemas", "Users", "Groups")


@router.api_route("/{rest:path}", methods=["GET", "POST", "PUT", "PATCH", "DELETE"])
def elsewhere(rest: str, _caller: ScimCaller) -> Response:
    """A SCIM error for any other path (404) or method (405), never the JSON:API one."""
    if rest.split("/")[0] in FIXED:
        body = {"schemas": [model.ERROR], "status": "405", "detail": f"/{rest} does not answer this method"}
        return JSONResponse(body, status_code=405, media_type=MEDIA)
    return scim_error(errors.NotFound(f"no SCIM endpoint /{rest}"))
