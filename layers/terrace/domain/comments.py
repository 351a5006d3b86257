"""Run comments: a non-empty body of bounded length."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from terrace.domain import limits
from terrace.domain.errors import Invalid

COMMENT_MAX = limits.RUN_MESSAGE_MAX  # characters


@dataclass(frozen=True)
class Comment:
    id: str
    run_id: str
    body: str
    author: str  # username
    created_at: str
    event_id: str = ""  # its `commented` run event


def checked_body(body: Any, field: str = "body") -> str:
    text = limits.text(body, field, COMMENT_MAX)
    if not text.strip():
        raise Invalid(f"{field} must not be empty", pointer=f"/data/attributes/{field}")
    return text
