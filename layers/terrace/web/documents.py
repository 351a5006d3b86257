"""Request documents that are lists of resources (`{"data": [{"type": ..., "id": ...}, ...]}`: members of a team,
workspaces of a tag, remote state consumers, tags of a workspace) as pydantic models: one check and one 422 with a
JSON pointer to the first bad entry, instead of a loop of isinstance tests in each router."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, StrictStr, ValidationError

from terrace.domain.errors import Invalid


class _Lenient(BaseModel):
    model_config = ConfigDict(extra="allow")  # as liberal as TFC: unknown members are ignored


class ResourceRef(_Lenient):
    type: StrictStr | None = None
    id: StrictStr


class TagAttributes(_Lenient):
    name: StrictStr | None = None


class TagEntry(_Lenient):
    """A tag by id (`{type: tags, id}`) or by name (`{type: tags, attributes: {name}}`)."""

    type: StrictStr | None = None
    id: StrictStr | None = None
    attributes: TagAttributes | None = None


class RefList(_Lenient):
    data: list[ResourceRef]


class TagList(_Lenient):
    data: list[TagEntry]


def _pointer(exc: ValidationError) -> str:
    location = exc.errors()[0]["loc"] if exc.errors() else ()
    return "/" + "/".join(str(part) for part in location[:2]) if location else "/data"


def resource_ids(body: Any, type_: str, *, untyped: bool = True, non_empty: bool = True) -> list[str]:
    """The ids of a list of `type_` resources; entries without a `type` count as `type_` when `untyped`."""
    shape = f"{{data: [{{type: {type_}, id}}, ...]}}"
    try:
        refs = RefList.model_validate(body).data
    except ValidationError as exc:
        raise Invalid(f"request body must be {shape}", pointer=_pointer(exc)) from None
    for n, ref in enumerate(refs):
        if ref.type != type_ and not (untyped and ref.type is None):
            raise Invalid(f"each entry is {{type: {type_}, id}}", pointer=f"/data/{n}/type")
    if non_empty and not refs:
        raise Invalid(f"at least one of {type_} is required", pointer="/data")
    return [ref.id for ref in refs]


def tag_entries(body: Any) -> list[tuple[str | None, str | None]]:
    """(id, name) of each tag a list names, empty strings as None."""
    try:
        entries = TagList.model_validate(body).data
    except ValidationError as exc:
        raise Invalid(
            "request body must be {data: [{type: tags, id} or {type: tags, attributes: {name}}, ...]}",
            pointer=_pointer(exc),
        ) from None
    return [(e.id or None, (e.attributes.name if e.attributes else None) or None) for e in entries]
