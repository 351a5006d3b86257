"""Change requests (HCP Terraform's): a to-do on a workspace, made for every workspace an explorer query found
(`POST /organizations/:org/explorer/bulk-actions`), shown on the workspace until someone archives it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from terrace.domain.errors import Invalid

PREFIX = "wscr"
SUBJECT_MAX, MESSAGE_MAX = 200, 10_000
TARGETS_MAX = 500  # workspaces one bulk action reaches


@dataclass(frozen=True)
class ChangeRequest:
    id: str
    workspace_id: str
    organization: str
    subject: str
    message: str
    created_at: str
    created_by: str = ""
    archived_at: str | None = None
    archived_by: str | None = None
    version: int = 1


def subject_and_message(inputs: Any) -> tuple[str, str]:
    """The `action_inputs` of a change request: a subject (1 to 200 characters) and a message (up to 10,000)."""
    inputs = inputs if isinstance(inputs, dict) else {}
    subject, message = inputs.get("subject"), inputs.get("message", "")
    if not isinstance(subject, str) or not subject.strip() or len(subject) > SUBJECT_MAX:
        raise Invalid(f"subject: 1 to {SUBJECT_MAX} characters", pointer="/data/attributes/action_inputs/subject")
    if not isinstance(message, str) or len(message) > MESSAGE_MAX:
        raise Invalid(f"message: a text of at most {MESSAGE_MAX} characters",
                      pointer="/data/attributes/action_inputs/message")  # fmt: skip
    return subject.strip(), message
