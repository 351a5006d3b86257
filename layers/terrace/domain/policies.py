"""Policies and policy sets (HCP Terraform's policy as code): the entities and their input rules.

A policy is `opa` (Rego, evaluated by Terrace) or `sentinel` (stored and listed for API compatibility, never
evaluated: Terrace has no Sentinel runtime). A policy set groups individually managed policies, or carries policy
set versions (a tarball of `.rego` files and a `policies.hcl`), and applies to every workspace (`global`) or to its
workspaces and the workspaces of its projects, less its workspace exclusions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from terrace.domain import limits
from terrace.domain.errors import Invalid

KINDS = ("sentinel", "opa")
OPA_LEVELS = ("advisory", "mandatory")
SENTINEL_LEVELS = ("advisory", "soft-mandatory", "hard-mandatory")
NAME_RE = re.compile(r"^[A-Za-z0-9_.-]{1,128}\Z")
DESCRIPTION_MAX = 2000
QUERY_MAX = 1024
CONTENT_MAX_BYTES = 128 * 1024  # one policy's Rego (stored in its item)
MEMBERS_MAX = 500  # policies, workspaces, projects or exclusions of one policy set
POLICY_SETS_MAX = 200  # policy sets of one organization


@dataclass(frozen=True)
class Policy:
    id: str
    organization: str  # the organization's name
    name: str
    kind: str
    description: str
    query: str | None
    enforcement_level: str
    enforce_path: str
    has_content: bool
    policy_set_ids: tuple[str, ...]
    updated_at: str


@dataclass(frozen=True)
class PolicySet:
    id: str
    organization: str
    name: str
    description: str
    kind: str
    global_: bool
    overridable: bool
    agent_enabled: bool
    policy_tool_version: str
    policies_path: str
    policy_update_pattern: tuple[str, ...]
    policy_ids: tuple[str, ...]
    workspace_ids: tuple[str, ...]
    project_ids: tuple[str, ...]
    exclusion_ids: tuple[str, ...]
    current_version_id: str | None
    newest_version_id: str | None
    created_at: str
    updated_at: str
    tag_selectors: tuple[TagSelector, ...] = ()
    project_exclusion_ids: tuple[str, ...] = ()
    vcs_repo: dict[str, Any] | None = None  # the repository its versions come from (`services/vcs/connections.py`)

    def applies_to(self, workspace_id: str, project_id: str, tags: tuple[tuple[str, str], ...] = ()) -> bool:
        """Whether the set applies to a workspace (in `project_id`, with key-value `tags`): never to an excluded one
        (by id, by its project or by an exclusion tag selector); else to every one (global), or to those named, in
        its projects or matching an inclusion tag selector."""
        if workspace_id in self.exclusion_ids or project_id in self.project_exclusion_ids:
            return False
        if any(s.exclude and s.matches(tags) for s in self.tag_selectors):
            return False
        if self.global_ or workspace_id in self.workspace_ids or project_id in self.project_ids:
            return True
        return any(not s.exclude and s.matches(tags) for s in self.tag_selectors)


@dataclass(frozen=True)
class TagSelector:
    """A policy set's tag selector: workspaces tagged `key` (with `value`; None: any value) are included, or
    excluded (`exclude`)."""

    key: str
    value: str | None
    exclude: bool

    def matches(self, tags: tuple[tuple[str, str], ...]) -> bool:
        return any(k == self.key and (self.value is None or v == self.value) for k, v in tags)


TAG_SELECTOR_KEY_MAX = 128
TAG_SELECTOR_VALUE_MAX = 256


def check_tag_selectors(raw: Any, pointer: str = "/data") -> list[TagSelector]:
    """`[{tag-key, tag-value, is-exclude}]` (a null or absent value: any value), at least one, each once."""
    if not isinstance(raw, list) or not raw or len(raw) > MEMBERS_MAX:
        raise Invalid(f"tag selectors must be a list of 1 to {MEMBERS_MAX} {{tag-key, tag-value, is-exclude}}",
                      pointer=pointer)  # fmt: skip
    found: list[TagSelector] = []
    for entry in raw:
        entry = entry.get("attributes", entry) if isinstance(entry, dict) else None
        key = entry.get("tag-key") if isinstance(entry, dict) else None
        value = entry.get("tag-value") if isinstance(entry, dict) else None
        exclude = entry.get("is-exclude", False) if isinstance(entry, dict) else None
        if not isinstance(key, str) or not 0 < len(key) <= TAG_SELECTOR_KEY_MAX:
            raise Invalid(f"tag-key must be 1 to {TAG_SELECTOR_KEY_MAX} characters", pointer=pointer)
        if value is not None and (not isinstance(value, str) or len(value) > TAG_SELECTOR_VALUE_MAX):
            raise Invalid(f"tag-value must be null or at most {TAG_SELECTOR_VALUE_MAX} characters", pointer=pointer)
        if not isinstance(exclude, bool):
            raise Invalid("is-exclude must be true or false", pointer=pointer)
        selector = TagSelector(key, value, exclude)
        if selector not in found:
            found.append(selector)
    return found


@dataclass(frozen=True)
class PolicySetParameter:
    id: str
    policy_set_id: str
    key: str
    value: str  # "" when sensitive (never shown)
    sensitive: bool
    category: str = "policy-set"


@dataclass(frozen=True)
class VersionPolicy:
    """One policy of a policy set version's policies.hcl."""

    name: str
    query: str
    enforcement_level: str
    description: str = ""


@dataclass(frozen=True)
class PolicySetVersion:
    id: str
    policy_set_id: str
    organization: str
    source: str
    status: str  # pending | ready | errored
    error: str | None
    error_message: str | None
    created_at: str
    updated_at: str
    status_timestamps: dict[str, str] = field(default_factory=dict)
    policies: tuple[VersionPolicy, ...] = ()
    blob_key: str = ""
    ingress: dict[str, Any] | None = None  # a version made from a forge's commit: HCP's ingress attributes


@dataclass(frozen=True)
class Bundle:
    """What a policy set is evaluated with: its Rego modules, data documents and the policies (queries) to ask."""

    modules: dict[str, str] = field(default_factory=dict)  # path -> Rego
    data: dict[str, Any] = field(default_factory=dict)  # merged data.json documents
    policies: tuple[VersionPolicy, ...] = ()
    files: tuple[str, ...] = ()


def check_name(value: Any, what: str = "name") -> str:
    if not isinstance(value, str) or not value:
        raise Invalid(f"{what} is required", pointer=f"/data/attributes/{what}")
    if not NAME_RE.match(value):
        raise Invalid(
            f"{what} may contain only letters, numbers, '-', '_' and '.' (at most 128)",
            pointer=f"/data/attributes/{what}",
        )
    return value


def check_kind(value: Any) -> str:
    kind = value or "sentinel"
    if kind not in KINDS:
        raise Invalid("kind must be 'opa' or 'sentinel'", pointer="/data/attributes/kind")
    return str(kind)


def check_description(attrs: dict[str, Any], current: str = "") -> str:
    value = attrs.get("description", current)
    return "" if value is None else limits.text(value, "description", DESCRIPTION_MAX)


POLICIES_PATH_MAX = 512


def check_policies_path(value: Any) -> str:
    """`policies-path`: the folder of a repository that holds a VCS policy set's files ("" = the root), relative,
    without `..`."""
    if value is None or value == "":
        return ""
    parts = [p for p in limits.text(value, "policies-path", POLICIES_PATH_MAX).strip().split("/") if p not in ("", ".")]
    if any(p == ".." or "\\" in p or "\x00" in p for p in parts):
        raise Invalid("policies-path must be a folder of the repository, relative to its root",
                      pointer="/data/attributes/policies-path")  # fmt: skip
    return "/".join(parts)


def repository_source(repo: dict[str, Any] | None, policies_path: str) -> tuple[Any, ...] | None:
    """What a VCS policy set's versions are made of: another one means a new version from the branch's head."""
    if not repo:
        return None
    return (repo.get("identifier"), repo.get("branch"), repo.get("oauth-token-id"), policies_path)


def check_level(kind: str, value: Any) -> str:
    levels = OPA_LEVELS if kind == "opa" else SENTINEL_LEVELS
    if value not in levels:
        raise Invalid(
            f"enforcement-level of a {kind} policy must be one of {', '.join(levels)}",
            pointer="/data/attributes/enforcement-level",
        )
    return str(value)


def check_query(value: Any) -> str:
    query = limits.text(value, "query", QUERY_MAX) if value is not None else ""
    if not query.strip():
        raise Invalid(
            "query is required for an opa policy (e.g. data.terraform.policies.<name>.deny)",
            pointer="/data/attributes/query",
        )
    return query.strip()


def enforcement(kind: str, attrs: dict[str, Any], default_path: str) -> tuple[str | None, str | None]:
    """(level, path) from `enforcement-level`, else from the deprecated `enforce` list ([{path, mode}])."""
    level = attrs.get("enforcement-level")
    path: str | None = None
    enforce = attrs.get("enforce")
    if enforce is not None:
        if not isinstance(enforce, list) or not enforce or not all(isinstance(e, dict) for e in enforce):
            raise Invalid("enforce must be a list of {path, mode}", pointer="/data/attributes/enforce")
        first = enforce[0]
        path = limits.text(first.get("path") or default_path, "enforce path", 256)
        level = level or first.get("mode")
    return (check_level(kind, level) if level is not None else None), path


def overridable_for(kind: str, value: Any, current: bool = False) -> bool:
    if value is None:
        return current
    if not isinstance(value, bool):
        raise Invalid("overridable must be a boolean", pointer="/data/attributes/overridable")
    return value if kind == "opa" else False


def check_bool(attrs: dict[str, Any], key: str, current: bool) -> bool:
    value = attrs.get(key, current)
    if value is None:
        return current
    if not isinstance(value, bool):
        raise Invalid(f"{key} must be a boolean", pointer=f"/data/attributes/{key}")
    return value


def failing_level(level: str) -> str:
    """HCP's result-count buckets: advisory failures, and mandatory ones (soft/hard-mandatory count as mandatory)."""
    return "advisory" if level == "advisory" else "mandatory"
