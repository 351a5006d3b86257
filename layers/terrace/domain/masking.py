"""Masking sensitive values in text: the runner before it streams or prints a log, the server before it
archives or serves one, and plan JSON before clients see it.

A value is masked in the forms terraform prints it: as is, JSON-escaped (Python's and Go's flavours:
Go also escapes <, > and &), and Go-quoted (`%q` in plan diffs). Values shorter than `MIN_SECRET_CHARS`
are not masked (masking "a" everywhere would destroy the log and reveal it anyway).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

MASK = b"***"
MIN_SECRET_CHARS = 4


def _go_json(value: str) -> str:
    return (
        json.dumps(value, ensure_ascii=False)[1:-1]
        .replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
    )


def _go_quoted(value: str) -> str:
    escaped = value.replace("\\", "\\\\").replace('"', '\\"')
    for raw, esc in (("\n", "\\n"), ("\t", "\\t"), ("\r", "\\r")):
        escaped = escaped.replace(raw, esc)
    return "".join(ch if ch >= " " or ch in "\n\t\r" else f"\\x{ord(ch):02x}" for ch in escaped)


def forms(value: str) -> set[bytes]:
    """The byte strings under which `value` may appear in terraform's output."""
    texts = {value, json.dumps(value)[1:-1], json.dumps(value, ensure_ascii=False)[1:-1], _go_json(value)}
    texts.add(_go_quoted(value))
    return {t.encode() for t in texts if t}


class Masker:
    """Replaces every form of every secret with `MASK`, in one left-to-right pass (longest form first)."""

    def __init__(self, secrets: Iterable[str]) -> None:
        found: set[bytes] = set()
        for secret in secrets:
            if secret and len(secret) >= MIN_SECRET_CHARS:
                found |= forms(secret)
        ordered = sorted(found, key=len, reverse=True)
        self._forms = ordered
        self.key = tuple(sorted(ordered))  # equal for two maskers that mask alike
        self.longest = len(ordered[0]) if ordered else 0
        self._pattern = re.compile(b"|".join(re.escape(f) for f in ordered)) if ordered else None

    def __bool__(self) -> bool:
        return self._pattern is not None

    def mask(self, data: bytes) -> bytes:
        return self._pattern.sub(MASK, data) if self._pattern is not None else data

    def mask_text(self, text: str) -> str:
        return self.mask(text.encode()).decode(errors="replace") if self._pattern is not None else text

    def safe_prefix(self, data: bytes) -> tuple[bytes, int]:
        """Masks what can be decided now: (masked output, bytes of `data` consumed).

        Bytes at the end that may begin a secret whose rest has not arrived yet stay unconsumed (at
        most `longest - 1`). The output for a prefix never changes as `data` grows, so readers of a
        growing log see stable offsets.
        """
        if self._pattern is None:
            return data, len(data)
        cut = max(len(data) - (self.longest - 1), 0)
        out, pos = bytearray(), 0
        for match in self._pattern.finditer(data):
            if match.start() >= cut:
                break
            out += data[pos : match.start()] + MASK
            pos = match.end()
        end = max(cut, pos)
        out += data[pos:end]
        while end < len(data):  # the last bytes, one position at a time, as far as they are decided
            tail = data[end:]
            if any(len(form) > len(tail) and form.startswith(tail) for form in self._forms):
                break  # a secret may start here: wait for more
            complete = next((form for form in self._forms if tail.startswith(form)), None)  # longest first
            out += MASK if complete else tail[:1]
            end += len(complete) if complete else 1
        return bytes(out), end


class StreamMasker:
    """Masks a byte stream fed in arbitrary pieces: a secret split across pieces is still masked."""

    def __init__(self, masker: Masker) -> None:
        self._masker = masker
        self._pending = b""

    def feed(self, data: bytes) -> bytes:
        out, used = self._masker.safe_prefix(self._pending + data)
        self._pending = (self._pending + data)[used:]
        return out

    def flush(self) -> bytes:
        out, self._pending = self._masker.mask(self._pending), b""
        return out


def mask_strings(value: Any, masker: Masker) -> Any:
    """Every string in a JSON document (keys too) with the secrets masked."""
    if not masker:
        return value
    if isinstance(value, str):
        return masker.mask_text(value)
    if isinstance(value, dict):
        return {mask_strings(k, masker): mask_strings(v, masker) for k, v in value.items()}
    if isinstance(value, list):
        return [mask_strings(v, masker) for v in value]
    return value
