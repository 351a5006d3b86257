"""Workspace variables (a sensitive one's value is never shown) and what to mask in run output."""

from __future__ import annotations

import re
from dataclasses import dataclass

# TFC documents a key as a string and accepts any (go-tfe's tests use random UUIDs). Terrace refuses only what
# cannot reach terraform at all: control characters, and `=` in an environment variable's name. A terraform
# variable whose key is not an identifier is stored; its run errors naming it (`runner/rundir.py`).
KEY_MAX = 128

TERRAFORM_KEY = re.compile(r"^[^\x00-\x1f\x7f]+\Z")

ENV_KEY = re.compile(r"^[^\x00-\x1f\x7f=]+\Z")

MAX_VALUE_BYTES = 4096  # one KMS Encrypt call


@dataclass(frozen=True)
class SensitiveValues:
    """What to mask in a workspace's run output: the values, and which terraform variables they are."""

    values: tuple[str, ...]
    terraform_keys: frozenset[str]


@dataclass(frozen=True)
class StoredVariable:
    """What every stored variable shows its readers (a workspace's, a variable set's, an effective one)."""

    id: str
    key: str
    category: str
    hcl: bool
    sensitive: bool
    description: str
    created_at: str
    value: str | None  # None when sensitive
    version_id: str


@dataclass(frozen=True)
class Variable(StoredVariable):
    workspace_id: str

    @property
    def unreadable_by_terraform(self) -> bool:
        """A terraform variable whose key terraform cannot read as a name: the API stores it (TFC accepts any key),
        but every run of its workspace errors naming it (`runner/rundir.py`) until it is renamed or deleted."""
        return self.category == "terraform" and not TERRAFORM_NAME.match(self.key)


# What terraform reads as a variable name (an identifier; hyphens allowed after the first character).
TERRAFORM_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*\Z")
