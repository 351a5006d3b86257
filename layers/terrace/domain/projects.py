"""Projects: groups of workspaces. Every organization has a Default Project whose id is derived from
the organization; it cannot be deleted or renamed."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any

from terrace.domain.errors import Invalid


def default_project_id(organization: str) -> str:
    """The Default Project's id; workspaces without a project belong to it."""
    return "prj-" + hashlib.sha256(f"default#{organization}".encode()).hexdigest()[:16]


NAME_RE = re.compile(r"^[A-Za-z0-9 _-]{3,40}$")
DEFAULT_PROJECT = "Default Project"  # its name


@dataclass(frozen=True)
class Project:
    id: str
    name: str
    organization: str
    description: str
    created_at: str
    version: int

    @property
    def is_default(self) -> bool:
        return self.id == default_project_id(self.organization)


def check_name(value: Any) -> str:
    if not isinstance(value, str) or not NAME_RE.match(value):
        raise Invalid(
            "Name may only contain letters, numbers, spaces, `-`, and `_`, and must be 3 to 40 characters long",
            pointer="/data/attributes/name",
        )
    return value
