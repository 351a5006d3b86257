"""Organization memberships: `invited` until their user accepts, then `active`."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from terrace.domain import limits
from terrace.domain.errors import Invalid

EMAIL_RE = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+\Z")

STATUSES = ("invited", "active")


@dataclass(frozen=True)
class Membership:
    id: str
    organization: str
    user_id: str
    email: str
    status: str
    created_at: str
    hidden: bool = False  # an invitation of an existing account: nobody in the organization sees it until accepted


def check_email(value: Any) -> str:
    if not isinstance(value, str) or not EMAIL_RE.match(value):
        raise Invalid("email must be an email address", pointer="/data/attributes/email")
    return limits.text(value, "email", limits.EMAIL_MAX).lower()
