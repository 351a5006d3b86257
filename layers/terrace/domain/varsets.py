"""Variable sets: variables an organization shares with its workspaces (global, or applied to workspaces and
projects), and the precedence that decides which value of a key reaches a run.

Precedence follows HCP Terraform's "Workspace Variables" page (cloud-docs/workspaces/variables, sections
"Precedence" and "Precedence with priority variable sets"), from lowest to highest:

  global sets < project-scoped sets < workspace-scoped sets < workspace variables < run variables (`-var`)
  < priority workspace-scoped sets < priority project-scoped sets < priority global sets

("Workspace and project-scoped variable sets always take precedence over global variable sets"; "Workspace-specific
variables always overwrite variables from variable sets"; `-var` "overwrite[s] workspace-specific and variable set
variables"; a priority set's values "take precedence over any variables with the same key set at a more specific
scope", so a priority global set beats everything.) Among sets of one scope, "HCP Terraform compares the variable
set names and uses values from the variable set with lexical precedence ... the lexical order of Unicode code
points": of `A_Variable_Set` and `B_Variable_Set`, `A_Variable_Set` wins. Python compares `str` by code point.
Keys conflict only within a category (a terraform variable and an environment variable never do).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from terrace.domain import limits
from terrace.domain.errors import Invalid
from terrace.domain.projects import Project
from terrace.domain.variables import StoredVariable
from terrace.domain.workspace import Workspace

NAME_MAX = 128  # TFC does not document one; a name is a sort key and a line of the UI
DESCRIPTION_MAX = 512

# Where a value comes from, for one workspace (a set applied both to the workspace and to its project counts as
# workspace-scoped: the more specific of the two).
GLOBAL = "global"
PROJECT = "project"
WORKSPACE_SET = "workspace"
WORKSPACE = "workspace-variable"
RUN = "run"

_TIER = {GLOBAL: 0, PROJECT: 1, WORKSPACE_SET: 2, WORKSPACE: 3, RUN: 4}
_PRIORITY_TIER = {WORKSPACE_SET: 5, PROJECT: 6, GLOBAL: 7}


@dataclass(frozen=True)
class VariableSet:
    id: str
    organization: str  # the organization's key
    name: str
    description: str
    global_: bool
    priority: bool
    workspace_ids: tuple[str, ...]  # in the order they were applied
    project_ids: tuple[str, ...]
    created_at: str
    updated_at: str
    version: int

    def scope_for(self, workspace_id: str, project_id: str) -> str | None:
        """How this set reaches a workspace of `project_id` (None: it does not)."""
        if self.global_:
            return GLOBAL
        if workspace_id in self.workspace_ids:
            return WORKSPACE_SET
        if project_id in self.project_ids:
            return PROJECT
        return None


@dataclass(frozen=True)
class SetVariable(StoredVariable):
    """A variable of a set, as readers see it."""

    varset_id: str


@dataclass(frozen=True)
class VarsetView:
    """A set as the API and the UI show it: its organization's current name, its variables, and (when included)
    the workspaces and projects it applies to."""

    varset: VariableSet
    organization_name: str
    variables: list[SetVariable]
    workspaces: list[Workspace] = field(default_factory=list)
    projects: list[Project] = field(default_factory=list)
    included: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Source:
    """What gave a variable its value for a workspace."""

    kind: str  # "workspaces", "varsets" or "runs" (the JSON:API type of what gave the value)
    id: str
    name: str
    scope: str  # GLOBAL, PROJECT, WORKSPACE_SET, WORKSPACE or RUN
    priority: bool = False


@dataclass(frozen=True)
class EffectiveVariable(StoredVariable):
    """A variable that reaches a workspace after precedence (`all-vars`)."""

    source: Source


def check_name(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise Invalid("name is required", pointer="/data/attributes/name")
    if len(value) > NAME_MAX or any(ord(c) < 0x20 or ord(c) == 0x7F for c in value):
        raise Invalid(
            f"name must be at most {NAME_MAX} characters, without control characters", pointer="/data/attributes/name"
        )
    return value


def name_taken(name: str) -> Invalid:
    return Invalid(
        f"a variable set named {name!r} already exists in this organization", pointer="/data/attributes/name"
    )


def check_description(value: Any) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise Invalid("description must be a string", pointer="/data/attributes/description")
    return limits.text(value, "description", DESCRIPTION_MAX)


def check_flag(attrs: dict[str, Any], name: str, default: bool) -> bool:
    value = attrs.get(name, default)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise Invalid(f"{name} must be true or false", pointer=f"/data/attributes/{name}")
    return value


@dataclass(frozen=True)
class Candidate:
    """One value of a key offered to a workspace's run: by a set (its scope, priority and name), by the workspace
    or by the run. `payload` is what the caller needs back (the stored variable)."""

    key: str
    category: str
    scope: str
    priority: bool = False
    set_name: str = ""
    payload: Any = field(default=None, compare=False)

    @property
    def tier(self) -> int:
        if self.priority and self.scope in _PRIORITY_TIER:
            return _PRIORITY_TIER[self.scope]
        return _TIER[self.scope]


def _beats(a: Candidate, b: Candidate) -> bool:
    if a.tier != b.tier:
        return a.tier > b.tier
    return a.set_name < b.set_name  # lexical precedence: the name first in code-point order wins


def effective(candidates: Iterable[Candidate]) -> list[Candidate]:
    """The value that wins for each (category, key), ordered by category then key."""
    winners: dict[tuple[str, str], Candidate] = {}
    for candidate in candidates:
        slot = (candidate.category, candidate.key)
        held = winners.get(slot)
        if held is None or _beats(candidate, held):
            winners[slot] = candidate
    return [winners[slot] for slot in sorted(winners)]
