"""Values written as Sentinel source: the literals of Sentinel's grammar, for the mock files of a plan export
(`domain/sentinel_mocks.py`).

A string is a double-quoted literal with Go's escapes (JSON's escapes are a subset: `\\"`, `\\\\`, `\\n`, `\\t`,
`\\uXXXX`, ...), a number Go's decimal or float literal, `true`, `false`, `null`; a list `[ ... ]` and a map
`{ key: value, ... }` (any value may be a key; a trailing comma is allowed). A value Sentinel has no literal for
(a float that is not finite) is written `undefined`. Map keys are written sorted, so a bundle is reproducible.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

UNDEFINED = "undefined"
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\Z")
_INDENT = "\t"


def string(value: str) -> str:
    """A Sentinel string literal (JSON's escaping, which Go's string syntax accepts)."""
    return json.dumps(value, ensure_ascii=False)


def literal(value: Any, depth: int = 0) -> str:
    """`value` (what JSON decodes to) as a Sentinel literal, maps and lists one element a line."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else UNDEFINED
    if isinstance(value, str):
        return string(value)
    inner, outer = _INDENT * (depth + 1), _INDENT * depth
    if isinstance(value, dict):
        if not value:
            return "{}"
        entries = (f"{inner}{string(str(k))}: {literal(value[k], depth + 1)},\n" for k in sorted(value, key=str))
        return "{\n" + "".join(entries) + outer + "}"
    if isinstance(value, list | tuple):
        if not value:
            return "[]"
        return "[\n" + "".join(f"{inner}{literal(v, depth + 1)},\n" for v in value) + outer + "]"
    raise TypeError(f"no Sentinel literal for {type(value).__name__}")


def assignment(name: str, value: Any) -> str:
    """`name = <literal>` at a file's top level."""
    if not _IDENTIFIER.match(name):
        raise ValueError(f"not a Sentinel identifier: {name!r}")
    return f"{name} = {literal(value)}\n"


def module(values: dict[str, Any], *, imports: tuple[str, ...] = (), functions: str = "") -> str:
    """A mock module: its imports, one assignment per top-level value (in the order given), then `functions`."""
    head = "".join(f"import {string(name)}\n" for name in imports)
    body = "\n".join(assignment(name, value) for name, value in values.items())
    return (head + "\n" if head else "") + body + (("\n" + functions) if functions else "")
