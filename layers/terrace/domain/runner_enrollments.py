"""A runner's enrollment: the single-use, short-lived code a runner is started with instead of its token.

The scaler records one per runner it launches (its organization, the token id its runner will get, until when);
the launcher's identity of the started runner (an ECS task's ARN) is bound to it once the launch returned. A
local runner presents the code; a task presents a proof that it is the task bound (`runner_identity.py`), never
the code, which stays with the server. Either gets its token only once, only before the enrollment expires.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass

TTL_S = 900  # a Fargate task may take minutes to pull its image and start
CODE_PREFIX = "tre"


def new_code() -> str:
    return f"{CODE_PREFIX}.{secrets.token_urlsafe(32)}"


def code_hash(code: str) -> str:
    return hashlib.sha256(code.encode()).hexdigest()


@dataclass(frozen=True)
class Enrollment:
    runner_id: str
    organization: str
    token_id: str  # the id the runner's token gets when the code is exchanged
    token_expires_at: int  # epoch seconds
    expires_at: int  # the code's own end (epoch seconds)
    binds: bool  # its launcher names what it started: the code is good only for that identity
    bound_to: str | None = None
    used: bool = False

    def refusal(self, now: float) -> str | None:
        """Why this code cannot be exchanged by whoever presents it now (None: it can). Every refusal reads the same
        to the caller; the reason is for the server's log."""
        if self.used:
            return "already used"
        if now >= self.expires_at:
            return "expired"
        if self.binds:
            return "the code of a task: only the task's proof of its identity enrolls it"
        return None

    def proven_refusal(self, task_arn: str, now: float) -> str | None:
        """Why the task `task_arn`, proven to be itself, cannot enroll with this enrollment now (None: it can)."""
        if self.used:
            return "already used"
        if now >= self.expires_at:
            return "expired"
        if not self.binds or self.bound_to != task_arn:
            return f"not the enrollment of task {task_arn}"
        return None
