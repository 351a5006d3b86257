"""A tenant's regular expression (a workspace's `tags-regex`), compiled and matched within bounds.

The standard library's `re` has no timeout: a catastrophic pattern (`(a|aa)+$`) backtracks for as long as it likes
while holding the interpreter. The `regex` library matches with a `timeout=`, but it compiles a counted repeat by
expanding it: `x{100000000}` allocates gigabytes before anything is matched. So a pattern is first parsed by `re`'s
parser (which expands nothing), and refused when its counted repeats, multiplied through their nesting, would expand
past `EXPANSION_MAX` items; only then is it compiled by `regex` (`VERSION0`, `re`'s dialect). Compiled patterns are
kept, a few hundred at most."""

from __future__ import annotations

import functools
import re
from re import _constants as sre_constants
from re import _parser as sre_parse
from typing import Any

import regex

EXPANSION_MAX = 10_000  # `a{10000}` compiles in a few milliseconds
REPEATS = {sre_constants.MAX_REPEAT, sre_constants.MIN_REPEAT, getattr(sre_constants, "POSSESSIVE_REPEAT", None)}


class PatternRefused(ValueError):
    """The pattern does not compile, or would expand past the bound."""


class PatternTimedOut(Exception):
    """A tenant's pattern ran out of its time on one input (a catastrophic pattern): it matches nothing."""


@functools.lru_cache(maxsize=256)
def compile_bounded(pattern: str) -> regex.Pattern[str]:
    try:
        parsed = sre_parse.parse(pattern)
    except (re.error, OverflowError, RecursionError) as exc:
        raise PatternRefused(str(exc)) from exc
    if _expansion(parsed) > EXPANSION_MAX:
        raise PatternRefused(f"its counted repeats expand past {EXPANSION_MAX} items")
    try:
        return regex.compile(pattern, regex.VERSION0)
    except (regex.error, OverflowError, MemoryError) as exc:
        raise PatternRefused(str(exc)) from exc


def search(pattern: str, text: str, timeout_s: float) -> bool:
    """Whether `pattern` matches somewhere in `text`; PatternRefused, or PatternTimedOut past `timeout_s`."""
    try:
        return compile_bounded(pattern).search(text, timeout=timeout_s) is not None
    except TimeoutError as exc:
        raise PatternTimedOut(f"{pattern!r} ran out of its {timeout_s} s on {text[:128]!r}") from exc


def _expansion(node: Any) -> int:
    """How many items the pattern (a parsed subpattern, or any part of one) expands to."""
    if isinstance(node, sre_parse.SubPattern):
        return sum(_item(op, argument) for op, argument in node)
    if isinstance(node, list | tuple):
        return sum(_expansion(part) for part in node)
    return 0


def _item(op: Any, argument: Any) -> int:
    if op in REPEATS:
        low, high, inner = argument
        count = low if high == sre_constants.MAXREPEAT else high
        return max(1, count) * max(1, _expansion(inner))
    return max(1, _expansion(argument))  # a literal, a class: one item; a group, a branch: what they hold
