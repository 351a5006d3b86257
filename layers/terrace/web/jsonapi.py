"""JSON:API conventions, done once: documents, pagination, request bodies, the media type."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Annotated, Any, TypeVar

from fastapi import Depends, Request
from fastapi.responses import JSONResponse

from terrace.domain.errors import BadRequest, Invalid
from terrace.domain.limits import parse_json

MEDIA_TYPE = "application/vnd.api+json"
DEFAULT_PAGE_SIZE = 20
MAX_PAGE_SIZE = 100
T = TypeVar("T")


class JSONAPIResponse(JSONResponse):
    media_type = MEDIA_TYPE


def resource(
    type_: str,
    id_: str,
    attributes: dict[str, Any],
    relationships: dict[str, Any] | None = None,
    links: dict[str, Any] | None = None,
) -> dict[str, Any]:
    data: dict[str, Any] = {"id": id_, "type": type_, "attributes": attributes}
    if relationships is not None:
        data["relationships"] = relationships
    if links is not None:
        data["links"] = links
    return data


def ref(type_: str, id_: str | None) -> dict[str, Any]:
    """A to-one relationship (`data: null` when absent)."""
    return {"data": {"type": type_, "id": id_} if id_ else None}


def refs(type_: str, ids: Sequence[str]) -> dict[str, Any]:
    return {"data": [{"type": type_, "id": i} for i in ids]}


def respond(
    data: Any,
    status_code: int = 200,
    *,
    meta: dict[str, Any] | None = None,
    links: dict[str, Any] | None = None,
    included: list[dict[str, Any]] | None = None,
    headers: dict[str, str] | None = None,
) -> JSONAPIResponse:
    body: dict[str, Any] = {"data": data}
    if included:
        body["included"] = included
    if meta:
        body["meta"] = meta
    if links:
        body["links"] = links
    return JSONAPIResponse(body, status_code=status_code, headers=headers)


def includes(request: Request) -> frozenset[str]:
    """The names of `?include=a,b.c` (empty, absent or blank: none). Names Terrace cannot include are ignored."""
    raw = request.query_params.get("include") or ""
    return frozenset(name.strip() for name in raw.split(",") if name.strip())


def _page_raw(request: Request, name: str) -> str | None:
    return request.query_params.get(f"page[{name}]") or request.query_params.get(f"page%5B{name}%5D")


def _page_param(request: Request, name: str, default: int) -> int:
    raw = _page_raw(request, name)
    if raw in (None, ""):
        return default
    try:
        value = int(raw)
    except ValueError as exc:
        raise BadRequest(f"page[{name}] must be a positive integer") from exc
    if value < 1:
        raise BadRequest(f"page[{name}] must be a positive integer")
    return value


def paginate(
    request: Request, items: Sequence[T], unpaged_max: int = 0
) -> tuple[list[T], dict[str, Any], dict[str, Any]]:
    """Slice `items` by page[number]/page[size]; returns (page, meta, links). With `unpaged_max`, a request that
    names neither parameter gets every item on one page (up to that many), as HCP answers `GET /organizations`."""
    size = min(_page_param(request, "size", DEFAULT_PAGE_SIZE), MAX_PAGE_SIZE)
    if unpaged_max and not (_page_raw(request, "number") or _page_raw(request, "size")):
        size = max(DEFAULT_PAGE_SIZE, min(len(items), unpaged_max))
    number = _page_param(request, "number", 1)
    total = len(items)
    pages = max(1, math.ceil(total / size))
    page = list(items[(number - 1) * size : number * size])
    meta = {
        "pagination": {
            "current-page": number,
            "page-size": size,
            "prev-page": number - 1 if number > 1 else None,
            "next-page": number + 1 if number < pages else None,
            "total-pages": pages,
            "total-count": total,
        }
    }
    base = str(request.url.remove_query_params(["page[number]", "page[size]"]))
    sep = "&" if "?" in base else "?"
    link = lambda n: f"{base}{sep}page%5Bnumber%5D={n}&page%5Bsize%5D={size}"  # noqa: E731
    links = {
        "self": link(number),
        "first": link(1),
        "prev": link(number - 1) if number > 1 else None,
        "next": link(number + 1) if number < pages else None,
        "last": link(pages),
    }
    return page, meta, links


def respond_page(
    request: Request, items: Sequence[Any], serialize: Any, unpaged_max: int = 0, **extra: Any
) -> JSONAPIResponse:
    page, meta, links = paginate(request, items, unpaged_max)
    return respond([serialize(item) for item in page], meta=meta, links=links, **extra)


async def json_body(request: Request) -> Any:
    """The request body as parsed JSON (None when empty): a dependency, so endpoints stay plain `def`.
    Its size was bounded by the body-limit middleware; its nesting is checked before parsing."""
    raw = await request.body()
    if not raw.strip():
        return None
    return parse_json(raw)


async def raw_body(request: Request) -> bytes:
    return await request.body()


JSONBody = Annotated[Any, Depends(json_body)]
RawBody = Annotated[bytes, Depends(raw_body)]


def read_document(body: Any, expected_type: str | tuple[str, ...], *, required: bool = True) -> dict[str, Any]:
    """The `data` member of a JSON:API request body, checked for shape and type."""
    if body is None and not required:
        return {}
    if not isinstance(body, dict) or not isinstance(body.get("data"), dict):
        raise Invalid("request body must be a JSON:API document with a data object", pointer="/data")
    data: dict[str, Any] = body["data"]
    types = (expected_type,) if isinstance(expected_type, str) else expected_type
    if data.get("type") not in types:
        raise Invalid(f"data.type must be {' or '.join(repr(t) for t in types)}", pointer="/data/type")
    attributes = data.get("attributes", {})
    if attributes is None:
        data["attributes"] = {}
    elif not isinstance(attributes, dict):
        raise Invalid("data.attributes must be an object", pointer="/data/attributes")
    if data.get("relationships") is None:
        data["relationships"] = {}
    elif not isinstance(data["relationships"], dict):
        raise Invalid("data.relationships must be an object", pointer="/data/relationships")
    return data


def attributes(data: dict[str, Any]) -> dict[str, Any]:
    return dict(data.get("attributes") or {})


def relationship_id(data: dict[str, Any], name: str, type_: str | None = None) -> str | None:
    rel = (data.get("relationships") or {}).get(name)
    if rel is None:
        return None
    inner = rel.get("data") if isinstance(rel, dict) else None
    if inner is None:
        return None
    if not isinstance(inner, dict) or not isinstance(inner.get("id"), str):
        raise Invalid(f"relationship {name} must be {{data: {{type, id}}}}", pointer=f"/data/relationships/{name}")
    if type_ and inner.get("type") not in (type_, None, ""):
        raise Invalid(f"relationship {name} must point at {type_}", pointer=f"/data/relationships/{name}")
    return str(inner["id"])


def relationship_list(data: dict[str, Any], name: str) -> list[Any] | None:
    """The `data` list of a to-many relationship (None when the relationship is absent)."""
    rel = (data.get("relationships") or {}).get(name)
    if rel is None:
        return None
    if not isinstance(rel, dict) or not isinstance(rel.get("data") or [], list):
        raise Invalid(f"relationships.{name} must be {{data: [...]}}", pointer=f"/data/relationships/{name}")
    return list(rel.get("data") or [])


def tagged_filters(params: Any) -> list[tuple[str, str | None]]:
    """`filter[tagged][i][key]` / `[value]` (Terraform >= 1.10's `cloud` block with `tags = {k = "v"}`); an empty
    value (go-tfe sends one for a key alone) matches any value."""
    found = []
    for i in range(100):
        key = params.get(f"filter[tagged][{i}][key]")
        if key is None:
            break
        found.append((key, params.get(f"filter[tagged][{i}][value]") or None))  # no value: any value
    return found


def body_attributes(body: Any) -> dict[str, Any]:
    """`data.attributes` of a body whose `type` may be missing (some clients send none)."""
    data = body.get("data") if isinstance(body, dict) else None
    if body is not None and not isinstance(data, dict):
        raise Invalid("request body must be a JSON:API document with a data object", pointer="/data")
    attrs = (data or {}).get("attributes") or {}
    if not isinstance(attrs, dict):
        raise Invalid("data.attributes must be an object", pointer="/data/attributes")
    return dict(attrs)
