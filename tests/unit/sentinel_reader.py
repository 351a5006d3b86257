"""A reader of the Sentinel the plan exports write (`domain/sentinel_mocks.py`), independent of the writer: it
tokenizes Sentinel's literals (strings with Go's escapes, numbers, `true`/`false`/`null`/`undefined`, lists and
maps with optional trailing commas), reads each top-level `import "x"` and `name = <literal>`, and checks a
`name = func(...) { ... }` for balanced braces. Anything else fails the read."""

from __future__ import annotations

import json
import re
from typing import Any

UNDEFINED = object()
_TOKEN = re.compile(
    r'\s*(?:(?P<string>"(?:[^"\\\n]|\\.)*")|(?P<number>-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)'
    r"|(?P<name>[A-Za-z_][A-Za-z0-9_]*)|(?P<punct>[\[\]{}(),:=.]))"
)


def tokens(text: str) -> list[tuple[str, str]]:
    found, at = [], 0
    while at < len(text):
        if text[at:].strip() == "":
            break
        match = _TOKEN.match(text, at)
        assert match, f"no Sentinel token at {text[at : at + 40]!r}"
        kind = match.lastgroup or ""
        found.append((kind, match.group(kind)))
        at = match.end()
    return found


class _Reader:
    def __init__(self, text: str) -> None:
        self.tokens, self.at = tokens(text), 0

    def peek(self) -> tuple[str, str]:
        return self.tokens[self.at] if self.at < len(self.tokens) else ("end", "")

    def take(self, value: str | None = None) -> tuple[str, str]:
        token = self.peek()
        assert value is None or token[1] == value, f"expected {value!r}, got {token!r}"
        self.at += 1
        return token

    def literal(self) -> Any:
        kind, value = self.take()
        if kind == "string":
            return json.loads(value)
        if kind == "number":
            return json.loads(value)
        if kind == "name" and value in ("true", "false", "null", "undefined"):
            return {"true": True, "false": False, "null": None, "undefined": UNDEFINED}[value]
        if value == "[":
            items = []
            while self.peek()[1] != "]":
                items.append(self.literal())
                if self.peek()[1] != "]":
                    self.take(",")
            self.take("]")
            return items
        if value == "{":
            entries = {}
            while self.peek()[1] != "}":
                key = self.literal()
                self.take(":")
                assert key not in entries, f"duplicate key {key!r}"
                entries[key] = self.literal()
                if self.peek()[1] != "}":
                    self.take(",")
            self.take("}")
            return entries
        raise AssertionError(f"not a literal: {value!r}")

    def skip_function(self) -> None:
        self.take("func")
        self.take("(")
        while self.take()[1] != ")":
            pass
        self.take("{")
        depth = 1
        while depth:
            value = self.take()[1]
            assert value, "unbalanced function body"
            depth += {"{": 1, "}": -1}.get(value, 0)


def read_module(text: str) -> tuple[list[str], dict[str, Any], list[str]]:
    """(imports, top-level values by name, function names) of a mock file."""
    reader, imports, values, functions = _Reader(text), [], {}, []
    while reader.peek()[0] != "end":
        kind, name = reader.take()
        assert kind == "name", f"a top-level statement starts with {name!r}"
        if name == "import":
            imports.append(json.loads(reader.take()[1]))
            continue
        reader.take("=")
        if reader.peek()[1] == "func":
            reader.skip_function()
            functions.append(name)
            continue
        assert name not in values, f"{name} assigned twice"
        values[name] = reader.literal()
    return imports, values, functions
