"""An explorer query in HCP Terraform's shape, parsed and applied to the rows of `domain/explorer.py`.

`type` names the view; `fields` (or `fields[<type>]`) the attributes shown, comma-separated; each filter is
`filter[<n>][<field>][<operator>][<m>]=<value>` (filters all hold; a filter's values are alternatives); `sort` is a
field, descending with a leading `-`, several comma-separated. Operators: `is`, `is_not`, `contains`,
`does_not_contain`, `is_empty`, `is_not_empty`, `gt`, `lt`, `gteq`, `lteq` (numbers and versions) and `is_before`,
`is_after` (times). Versions compare by their first version number in semantic versioning's order (`1.10` after
`1.9`, `~> 5.1` as 5.1.0, `5.0.0-rc.1` before `5.0.0`). Anything else is
`BadRequest` (400) naming the parameter, never a row-by-row surprise.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qsl

from terrace.domain.errors import BadRequest
from terrace.domain.explorer import BOOL, FIELDS, INT, STR, TIME, VERSION, WORKSPACES, version_key

FILTERS_MAX, VALUES_MAX, VALUE_MAX_CHARS = 20, 20, 256
FIELDS_LISTED_MAX = 64
_FILTER = re.compile(r"^filter\[(\d{1,3})\]\[([a-z_]{1,64})\]\[([a-z_]{1,32})\]\[(\d{1,3})\]\Z")
OPERATORS: dict[str, frozenset[str]] = {
    "is": frozenset({STR, INT, BOOL, VERSION, TIME}),
    "is_not": frozenset({STR, INT, BOOL, VERSION, TIME}),
    "contains": frozenset({STR, VERSION}),
    "does_not_contain": frozenset({STR, VERSION}),
    "is_empty": frozenset({STR, INT, BOOL, VERSION, TIME}),
    "is_not_empty": frozenset({STR, INT, BOOL, VERSION, TIME}),
    "gt": frozenset({INT, VERSION}),
    "lt": frozenset({INT, VERSION}),
    "gteq": frozenset({INT, VERSION}),
    "lteq": frozenset({INT, VERSION}),
    "is_before": frozenset({TIME}),
    "is_after": frozenset({TIME}),
}
_ORDER = {"gt": lambda a, b: a > b, "lt": lambda a, b: a < b, "gteq": lambda a, b: a >= b, "lteq": lambda a, b: a <= b}


@dataclass(frozen=True)
class Filter:
    field: str
    operator: str
    values: tuple[str, ...]


@dataclass(frozen=True)
class Query:
    type: str = WORKSPACES
    fields: tuple[str, ...] = ()  # every field of the view when empty
    filters: tuple[Filter, ...] = ()
    sort: tuple[tuple[str, bool], ...] = ()  # (field, descending)

    @property
    def columns(self) -> tuple[str, ...]:
        return self.fields or tuple(FIELDS[self.type])

    def apply(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The rows every filter keeps, in the query's order (the view's first field when it names none)."""
        kinds = FIELDS[self.type]
        kept = [row for row in rows if all(_holds(f, kinds[f.field], row.get(f.field)) for f in self.filters)]
        for name, descending in reversed(self.sort or ((next(iter(kinds)), False),)):
            present = [r for r in kept if _sortable(kinds[name], r.get(name))]
            absent = [r for r in kept if not _sortable(kinds[name], r.get(name))]
            kind = kinds[name]
            present.sort(key=lambda row: _sort_key(kind, row[name]), reverse=descending)  # noqa: B023
            kept = present + absent  # no value (a version without a number: `latest`) sorts last either way
        return kept

    def attributes(self, row: dict[str, Any]) -> dict[str, Any]:
        return {name: row.get(name) for name in self.columns}


def parse(params: Sequence[tuple[str, str]]) -> Query:
    """The query of the request's parameters (repeated names kept in order)."""
    given = dict(params)
    view = given.get("type", "")
    if view not in FIELDS:
        raise BadRequest(f"type must be one of {', '.join(FIELDS)}")
    kinds = FIELDS[view]
    fields = _names(given.get(f"fields[{view}]", given.get("fields", "")), kinds, "fields")
    sort: list[tuple[str, bool]] = []
    for name in _split(given.get("sort", "")):
        field = name.removeprefix("-")
        _known(field, kinds, "sort")
        sort.append((field, name.startswith("-")))
    return Query(view, fields, _filters(params, kinds), tuple(sort))


def _filters(params: Sequence[tuple[str, str]], kinds: dict[str, str]) -> tuple[Filter, ...]:
    """Each (index, field, operator) is a filter, its values alternatives; one index may name several fields or
    operators (HCP's own example: `filter[0][name][contains][0]=aws&filter[0][version][is][0]=1.1`), each held."""
    found: dict[tuple[int, str, str], list[str]] = {}
    for key, value in params:
        if not key.startswith("filter["):
            continue
        match = _FILTER.match(key)
        if match is None:
            raise BadRequest(f"{key}: a filter is filter[<n>][<field>][<operator>][<m>]")
        number, field, operator = match.group(1), match.group(2), match.group(3)
        _known(field, kinds, key)
        if operator not in OPERATORS:
            raise BadRequest(f"{key}: unknown operator {operator!r}")
        if kinds[field] not in OPERATORS[operator]:
            raise BadRequest(f"{key}: {operator} does not apply to {field}")
        if len(value) > VALUE_MAX_CHARS:
            raise BadRequest(f"{key}: a value is at most {VALUE_MAX_CHARS} characters")
        _check_value(key, kinds[field], operator, value)
        values = found.setdefault((int(number), field, operator), [])
        values.append(value)
        if len(found) > FILTERS_MAX or len(values) > VALUES_MAX:
            raise BadRequest(f"at most {FILTERS_MAX} filters of {VALUES_MAX} values each")
    return tuple(Filter(f, op, tuple(values)) for (_, f, op), values in sorted(found.items(), key=lambda i: i[0][0]))


def _check_value(key: str, kind: str, operator: str, value: str) -> None:
    if operator in ("is_empty", "is_not_empty"):
        return
    if kind == INT and _int(value) is None:
        raise BadRequest(f"{key}: {value!r} is not a number")
    if kind == BOOL and value.lower() not in ("true", "false"):
        raise BadRequest(f"{key}: {value!r} is not true or false")
    if kind == VERSION and operator in _ORDER and version_key(value) is None:
        raise BadRequest(f"{key}: {value!r} is not a version")
    if kind == TIME and operator in ("is_before", "is_after") and _time(value) is None:
        raise BadRequest(f"{key}: {value!r} is not a date or time (ISO 8601)")


def _holds(f: Filter, kind: str, actual: Any) -> bool:
    empty = actual is None or actual == ""
    if f.operator == "is_empty":
        return empty
    if f.operator == "is_not_empty":
        return not empty
    if f.operator in ("is_not", "does_not_contain"):
        positive = Filter(f.field, "is" if f.operator == "is_not" else "contains", f.values)
        return not _holds(positive, kind, actual)
    return not empty and any(_matches(f.operator, kind, actual, value) for value in f.values)


def _matches(operator: str, kind: str, actual: Any, value: str) -> bool:
    if operator == "contains":
        return value.lower() in str(actual).lower()
    if operator == "is":
        if kind == BOOL:
            return bool(actual) == (value.lower() == "true")
        if kind == INT:
            return actual == _int(value)
        return str(actual) == value
    if operator in ("is_before", "is_after"):
        have, want = _time(str(actual)), _time(value)
        return have is not None and want is not None and (have < want if operator == "is_before" else have > want)
    compare: Callable[[Any, Any], bool] = _ORDER[operator]
    if kind == INT:
        return compare(actual, _int(value))
    have_version = version_key(str(actual))
    return have_version is not None and compare(have_version, version_key(value))


def _sortable(kind: str, value: Any) -> bool:
    return value not in (None, "") and (kind != VERSION or version_key(str(value)) is not None)


def _sort_key(kind: str, value: Any) -> Any:
    if kind == VERSION:
        return (version_key(str(value)), str(value))
    if kind in (INT, BOOL):
        return value
    return str(value).lower()


def _int(value: str) -> int | None:
    try:
        return int(value.strip())
    except ValueError:
        return None


def _time(value: str) -> datetime | None:
    try:
        parsed = datetime.fromisoformat(value.strip())
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _split(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def _names(text: str, kinds: dict[str, str], parameter: str) -> tuple[str, ...]:
    names = _split(text)
    for name in names:
        _known(name, kinds, parameter)
    return tuple(dict.fromkeys(names))


def _known(name: str, kinds: dict[str, str], parameter: str) -> None:
    if name not in kinds:
        raise BadRequest(f"{parameter}: unknown field {name[:64]!r}")


def pairs_of(query: Any) -> list[tuple[str, str]]:
    """A query given as a body's object or as a query string's parameters, as the (name, value) pairs `parse`
    reads. The object's filters are `{<field>: {<operator>: [<value>, ...]}}` (the bulk action's shape) or
    `{"field": ..., "operator": ..., "value": [...]}` (a saved view's); its `sort` and `fields` a comma-separated
    text or a list."""
    if isinstance(query, str):
        return parse_qsl(query[:8192], keep_blank_values=True)
    if not isinstance(query, dict):
        raise BadRequest("query: an object with the explorer's type, filter and sort, or a query string")
    pairs = [(key, str(query[key])) for key in ("type", "sort", "fields") if isinstance(query.get(key), str)]
    for key in ("sort", "fields"):
        listed = query.get(key)
        if isinstance(listed, list) and all(isinstance(name, str) for name in listed):
            pairs.append((key, ",".join(listed[:FIELDS_LISTED_MAX])))
    filters = query.get("filter") or []
    for n, entry in enumerate(filters if isinstance(filters, list) else [filters]):
        if isinstance(entry, dict) and {"field", "operator"} <= set(entry):  # a saved view's filter
            entry = {str(entry["field"]): {str(entry["operator"]): entry.get("value", [])}}
        for field, operators in entry.items() if isinstance(entry, dict) else []:
            for operator, values in operators.items() if isinstance(operators, dict) else []:
                listed = values if isinstance(values, list) else [values]
                pairs.extend(
                    (f"filter[{n}][{field}][{operator}][{m}]", str(v)) for m, v in enumerate(listed[:VALUES_MAX])
                )
            if len(pairs) > FILTERS_MAX * VALUES_MAX:
                raise BadRequest(f"at most {FILTERS_MAX} filters of {VALUES_MAX} values each")
    return pairs
