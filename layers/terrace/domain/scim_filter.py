"""SCIM filters (RFC 7644 3.4.2.2) parsed into a small tree and evaluated on a resource (a dict of its attributes):
attribute expressions (`userName eq "x"`, `title pr`; eq, ne, co, sw, ew, gt, ge, lt, le), `and`, `or` and
`not (...)` with their precedence (not, then and, then or), parentheses, and value paths (`emails[type eq "work"
and value co "@corp"]`, `members[value eq "id"]`). String comparisons ignore case; a filter is at most
`FILTER_MAX` characters and `DEPTH_MAX` levels deep, anything else is `InvalidFilter` (400, scimType
invalidFilter)."""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Any

from terrace.domain.errors import BadRequest

FILTER_MAX = 1024
DEPTH_MAX = 16
OPERATORS = ("eq", "ne", "co", "sw", "ew", "gt", "ge", "lt", "le", "pr")
_TOKEN = re.compile(r'\s*(?:(?P<str>"(?:[^"\\]|\\.)*")|(?P<punct>[()\[\]])|(?P<word>[^\s()\[\]"]+))')
_PATH = re.compile(r"^[A-Za-z][\w.:$-]*\Z")

Node = tuple[Any, ...]  # ("cmp", path, op, value) | ("and"|"or", a, b) | ("not", a) | ("path", attribute, inner)


class InvalidFilter(BadRequest):
    title = "invalidFilter"


def _tokens(text: str) -> list[tuple[str, str]]:
    found, at, text = [], 0, text.rstrip()
    while at < len(text):
        match = _TOKEN.match(text, at)
        if match is None or match.end() == at:
            raise InvalidFilter(f"cannot read the filter at {text[at : at + 40]!r}")
        kind = next(k for k in ("str", "punct", "word") if match[k] is not None)
        found.append((kind, match[kind]))
        at = match.end()
    return found


class _Parser:
    def __init__(self, text: str) -> None:
        self.tokens, self.at = _tokens(text), 0

    def peek(self, offset: int = 0) -> tuple[str, str] | None:
        at = self.at + offset
        return self.tokens[at] if at < len(self.tokens) else None

    def take(self) -> tuple[str, str]:
        token = self.peek()
        if token is None:
            raise InvalidFilter("the filter ends too early")
        self.at += 1
        return token

    def expect(self, punct: str) -> None:
        kind, value = self.take()
        if (kind, value) != ("punct", punct):
            raise InvalidFilter(f"expected {punct!r} at {value!r}")

    def keyword(self, word: str) -> bool:
        token = self.peek()
        return token is not None and token[0] == "word" and token[1].lower() == word

    def any_of(self, depth: int) -> Node:
        node = self.all_of(depth)
        while self.keyword("or"):
            self.at += 1
            node = ("or", node, self.all_of(depth))
        return node

    def all_of(self, depth: int) -> Node:
        node = self.negated(depth)
        while self.keyword("and"):
            self.at += 1
            node = ("and", node, self.negated(depth))
        return node

    def negated(self, depth: int) -> Node:
        if depth > DEPTH_MAX:
            raise InvalidFilter(f"a filter nests at most {DEPTH_MAX} levels")
        if self.keyword("not") and self.peek(1) == ("punct", "("):
            self.at += 2
            inner = self.any_of(depth + 1)
            self.expect(")")
            return ("not", inner)
        if self.peek() == ("punct", "("):
            self.at += 1
            inner = self.any_of(depth + 1)
            self.expect(")")
            return inner
        return self.expression(depth)

    def expression(self, depth: int) -> Node:
        kind, path = self.take()
        if kind != "word" or not _PATH.match(path):
            raise InvalidFilter(f"expected an attribute at {path!r}")
        if self.peek() == ("punct", "["):
            self.at += 1
            inner = self.any_of(depth + 1)
            self.expect("]")
            return ("path", path, inner)
        kind, op = self.take()
        if kind != "word" or op.lower() not in OPERATORS:
            raise InvalidFilter(f"unknown comparison {op!r} after {path}")
        if op.lower() == "pr":
            return ("cmp", path, "pr", None)
        return ("cmp", path, op.lower(), _literal(*self.take()))


def _literal(kind: str, raw: str) -> Any:
    if kind == "str":
        try:
            return json.loads(raw)
        except ValueError as exc:
            raise InvalidFilter(f"{raw[:40]} is not a JSON string") from exc
    lowered = raw.lower()
    if kind == "word" and lowered in ("true", "false", "null"):
        return {"true": True, "false": False, "null": None}[lowered]
    if kind == "word" and re.fullmatch(r"-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?", raw):
        return json.loads(raw)
    raise InvalidFilter(f"{raw[:40]!r} is not a value (a quoted string, a number, true, false or null)")


@lru_cache(maxsize=256)
def parse(text: str) -> Node:
    """The tree of a filter (InvalidFilter when it is not one)."""
    if len(text) > FILTER_MAX:
        raise InvalidFilter(f"a filter is at most {FILTER_MAX} characters")
    parser = _Parser(text)
    if not parser.tokens:
        raise InvalidFilter("the filter is empty")
    node = parser.any_of(0)
    if parser.peek() is not None:
        raise InvalidFilter(f"expected and/or at {parser.peek()[1]!r}")  # type: ignore[index]
    return node


def attribute(resource: dict[str, Any], name: str) -> Any:
    """An attribute by name, whatever its case (SCIM names are case-insensitive)."""
    for key, value in resource.items():
        if key.lower() == name.lower():
            return value
    return None


def _values(resource: dict[str, Any], path: str) -> list[Any]:
    """Every value `path` reaches (a multi-valued attribute's sub-attribute reaches each element's; a
    multi-valued attribute itself, each element's `value`)."""
    if path.lower().startswith("urn:"):
        schema, _, path = path.rpartition(":")
        extension = attribute(resource, schema)
        resource = extension if isinstance(extension, dict) else resource
    head, _, sub = path.partition(".")
    value = attribute(resource, head)
    if not sub:
        return [v.get("value") if isinstance(v, dict) else v for v in value] if isinstance(value, list) else [value]
    if isinstance(value, list):
        return [attribute(v, sub) for v in value if isinstance(v, dict)]
    return [attribute(value, sub)] if isinstance(value, dict) else []


def _compare(found: Any, op: str, wanted: Any) -> bool:
    if op == "pr":
        return found not in (None, "", [], {})
    if isinstance(found, str) and isinstance(wanted, str):
        found, wanted = found.lower(), wanted.lower()
    checks = {
        "eq": lambda: found == wanted,
        "ne": lambda: found != wanted,
        "co": lambda: isinstance(found, str) and wanted in found,
        "sw": lambda: isinstance(found, str) and found.startswith(wanted),
        "ew": lambda: isinstance(found, str) and found.endswith(wanted),
        "gt": lambda: found is not None and found > wanted,
        "ge": lambda: found is not None and found >= wanted,
        "lt": lambda: found is not None and found < wanted,
        "le": lambda: found is not None and found <= wanted,
    }
    try:
        return bool(checks[op]())
    except TypeError:
        return False


def holds(node: Node, resource: dict[str, Any]) -> bool:
    kind = node[0]
    if kind == "and":
        return holds(node[1], resource) and holds(node[2], resource)
    if kind == "or":
        return holds(node[1], resource) or holds(node[2], resource)
    if kind == "not":
        return not holds(node[1], resource)
    if kind == "path":
        items = attribute(resource, node[1])
        return any(isinstance(i, dict) and holds(node[2], i) for i in (items if isinstance(items, list) else [items]))
    _, path, op, wanted = node
    return any(_compare(value, op, wanted) for value in _values(resource, path) or [None])


def matches(resource: dict[str, Any], text: str | None) -> bool:
    return not text or holds(parse(text), resource)
