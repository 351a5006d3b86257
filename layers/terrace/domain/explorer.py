"""The explorer (HCP Terraform's `GET /organizations/:org/explorer`): one row per workspace, or per terraform
version, provider or module in use with the workspaces using it, built from what Terrace already holds.

A workspace's row joins the workspace, its latest run, its current assessment and its `Summary`: what the
explorer feed (`services/workflows/explorer_feed.py`) recorded from its current state (the terraform version that
wrote it, the providers of its resources) and from the configuration of its last applied run (module calls and
`required_providers`, with the exact provider versions of the configuration's `.terraform.lock.hcl`). The other
views group those rows. Filtering, sorting and paging are `domain/explorer_query.py`'s.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from terrace.domain.assessments import AssessmentResult
from terrace.domain.runs import Run
from terrace.domain.workspace import Workspace

WORKSPACES, TF_VERSIONS, PROVIDERS, MODULES = "workspaces", "tf_versions", "providers", "modules"
DOCUMENT_TYPES = {
    WORKSPACES: "visibility-workspace",
    TF_VERSIONS: "visibility-tf-version",
    PROVIDERS: "visibility-provider",
    MODULES: "visibility-module",
}
USES_MAX = 200  # modules or providers kept per workspace (a summary item stays small)

# each view's fields and their kinds (what the filters' operators and the sort compare them as)
STR, INT, BOOL, VERSION, TIME = "str", "int", "bool", "version", "time"
FIELDS: dict[str, dict[str, str]] = {
    WORKSPACES: {
        "workspace_name": STR,
        "external_id": STR,
        "organization_name": STR,
        "project_name": STR,
        "project_external_id": STR,
        "vcs_repo_identifier": STR,
        "tags": STR,
        "source_module_id": STR,
        "workspace_terraform_version": VERSION,
        "state_version_terraform_version": VERSION,
        "current_run_status": STR,
        "current_run_external_id": STR,
        "current_run_applied_at": TIME,
        "drifted": BOOL,
        "resources_drifted": INT,
        "resources_undrifted": INT,
        "all_checks_succeeded": BOOL,
        "checks_passed": INT,
        "checks_failed": INT,
        "checks_errored": INT,
        "checks_unknown": INT,
        "resource_count": INT,
        "current_rum_count": INT,
        "providers": STR,
        "provider_count": INT,
        "modules": STR,
        "module_count": INT,
        "workspace_created_at": TIME,
        "workspace_updated_at": TIME,
    },
    TF_VERSIONS: {"unique_identifier": STR, "version": VERSION, "workspace_count": INT, "workspaces": STR},
    PROVIDERS: {"name": STR, "source": STR, "version": VERSION, "constraint": STR, "registry_type": STR,
                "workspace_count": INT, "workspaces": STR},
    MODULES: {"name": STR, "source": STR, "version": VERSION, "registry_type": STR, "workspace_count": INT,
              "workspaces": STR},
}  # fmt: skip
PUBLIC_REGISTRIES = ("registry.terraform.io", "registry.opentofu.org")


@dataclass(frozen=True)
class Use:
    """A module or provider a workspace uses: its name, its source as written, its version (exact when known: a
    provider's from the lock file, a module's from `.terraform/modules/modules.json`; else the configuration's
    constraint; empty when neither says) and the constraint its configuration gives (a provider's in
    `required_providers`: empty means unpinned, whatever version its lock file selected)."""

    name: str
    source: str
    version: str = ""
    constraint: str = ""

    def label(self) -> str:
        return f"{self.source}:{self.version}" if self.version else self.source


@dataclass(frozen=True)
class Summary:
    """What the explorer feed recorded of one workspace."""

    state_version_id: str = ""
    state_terraform_version: str = ""
    state_providers: tuple[str, ...] = ()  # `namespace/type` of the current state's resources
    configuration_version_id: str = ""
    modules: tuple[Use, ...] = ()
    providers: tuple[Use, ...] = ()  # the configuration's required_providers


@dataclass(frozen=True)
class WorkspaceFacts:
    """A readable workspace and what the reader may see of it (None: nothing, or not theirs to read)."""

    workspace: Workspace
    project_name: str
    organization_name: str
    summary: Summary = field(default_factory=Summary)
    latest_run: Run | None = None
    assessment: AssessmentResult | None = None


def provider_key(source: str) -> str:
    """`hashicorp/aws` of `hashicorp/aws`, `<host>/hashicorp/aws` or `provider["<host>/hashicorp/aws"]`."""
    inner = source.split('["', 1)[1].split('"]', 1)[0] if '["' in source else source
    parts = inner.strip().lower().split("/")
    return "/".join(parts[-2:]) if len(parts) >= 2 else inner.strip().lower()


def providers_of(summary: Summary) -> list[Use]:
    """The configuration's providers, then those only the state names (no version), by `namespace/type`."""
    found: dict[str, Use] = {}
    for use in summary.providers:
        found.setdefault(provider_key(use.source), use)
    for address in summary.state_providers:
        key = provider_key(address)
        if key not in found:
            found[key] = Use(key.split("/")[-1], key)  # used without required_providers: unpinned
    return sorted(found.values(), key=lambda u: (u.source, u.version))


def registry_type(source: str, kind: str) -> str | None:
    """`public` for an address of the public registry (no host, or its host), `private` for another registry's
    (this Terrace's, another's), None for a module that is no registry address (a path, git, an archive)."""
    if kind == MODULES and (source.startswith((".", "/")) or "::" in source or "://" in source):
        return None
    parts = [p for p in source.split("?", 1)[0].split("//", 1)[0].split("/") if p]
    named = len(parts) == (3 if kind == MODULES else 2)
    hosted = len(parts) == (4 if kind == MODULES else 3) and "." in parts[0]
    if named and ("." not in parts[0] or kind == PROVIDERS):
        return "public"
    if hosted:
        return "public" if parts[0].lower() in PUBLIC_REGISTRIES else "private"
    return None


def module_name(source: str) -> str:
    """A module's name from its source: a registry address's `<name>` (`[host/]ns/<name>/provider`), else the last
    part of its path (`git::https://host/org/<name>.git?ref=v1`, `./modules/<name>`)."""
    text = source.split("::", 1)[-1].split("?", 1)[0]
    base = text.split("://", 1)[-1].split("//", 1)[0]
    parts = [p for p in base.split("/") if p and p not in (".", "..")]
    registry = "://" not in text and "::" not in source and not source.startswith((".", "/"))
    if registry and ((len(parts) == 3 and "." not in parts[0]) or (len(parts) == 4 and "." not in parts[1])):
        return parts[-2]  # `ns/<name>/provider`, `<host>/ns/<name>/provider` (not `github.com/org/repo`)
    return (parts[-1] if parts else source).removesuffix(".git")


def workspace_row(facts: WorkspaceFacts) -> dict[str, Any]:
    ws, run, result, summary = facts.workspace, facts.latest_run, facts.assessment, facts.summary
    providers = providers_of(summary)
    checks = (result.checks if result else {}) or {}
    applied_at = run.status_timestamps.get("applied-at") if run is not None else None
    return {
        "id": ws.id,
        "workspace_name": ws.name,
        "external_id": ws.id,
        "organization_name": facts.organization_name,
        "project_name": facts.project_name,
        "project_external_id": ws.project_id,
        "vcs_repo_identifier": (ws.extra.get("vcs-repo") or {}).get("identifier"),
        "tags": ", ".join([*ws.tag_names, *(f"{k}:{v}" if v else k for k, v in ws.tag_bindings)]) or None,
        "source_module_id": ws.extra.get("source-module-id"),
        "workspace_terraform_version": ws.terraform_version,
        "state_version_terraform_version": summary.state_terraform_version or None,
        "current_run_status": run.status if run is not None else None,
        "current_run_external_id": run.id if run is not None else None,
        "current_run_applied_at": applied_at,
        "drifted": result.drifted if result else None,
        "resources_drifted": result.resources_drifted if result else None,
        "resources_undrifted": result.resources_undrifted if result else None,
        "all_checks_succeeded": result.all_checks_succeeded if result else None,
        "checks_passed": checks.get("pass", 0) if result else None,
        "checks_failed": checks.get("fail", 0) if result else None,
        "checks_errored": checks.get("error", 0) if result else None,
        "checks_unknown": checks.get("unknown", 0) if result else None,
        "resource_count": ws.resource_count,
        "current_rum_count": ws.resource_count,  # the current state's managed resources
        "providers": ", ".join(u.label() for u in providers) or None,
        "provider_count": len(providers),
        "modules": ", ".join(u.label() for u in summary.modules) or None,
        "module_count": len(summary.modules),
        "workspace_created_at": ws.created_at,
        "workspace_updated_at": ws.updated_at,
    }


def tf_version_rows(facts: Iterable[WorkspaceFacts]) -> list[dict[str, Any]]:
    groups: dict[str, list[str]] = {}
    for f in facts:
        groups.setdefault(f.workspace.terraform_version, []).append(f.workspace.name)
    return [
        {"id": f"tfv-{version}", "unique_identifier": f"tfv-{version}", "version": version, **_used_by(names)}
        for version, names in sorted(groups.items())
    ]


def use_rows(facts: Iterable[WorkspaceFacts], kind: str) -> list[dict[str, Any]]:
    """One row per (source, version) of a provider (`PROVIDERS`) or a module (`MODULES`) in use."""
    groups: dict[tuple[str, str, str], tuple[Use, list[str]]] = {}
    for f in facts:
        uses = providers_of(f.summary) if kind == PROVIDERS else list(f.summary.modules)
        seen: set[tuple[str, str, str]] = set()
        for use in uses:
            key = (use.source, use.version, use.constraint if kind == PROVIDERS else "")
            if key in seen:
                continue
            seen.add(key)
            groups.setdefault(key, (use, []))[1].append(f.workspace.name)
    prefix = "prov" if kind == PROVIDERS else "mod"
    rows = []
    for (_, _, constraint), (use, names) in sorted(groups.items()):
        row: dict[str, Any] = {"id": f"{prefix}-{use.source}:{use.version}", "name": use.name, "source": use.source,
                               "version": use.version}  # fmt: skip
        if kind == PROVIDERS:
            row["id"] += f":{constraint}" if constraint else ""
            row["constraint"] = constraint
        rows.append({**row, "registry_type": registry_type(use.source, kind), **_used_by(names)})
    return rows


def _used_by(names: list[str]) -> dict[str, Any]:
    ordered = sorted(set(names))
    return {"workspace_count": len(ordered), "workspaces": ", ".join(ordered)}


_VERSION_NUMBER = re.compile(r"(\d{1,9}(?:\.\d{1,9}){0,3})(?:-([0-9A-Za-z.-]{1,64}))?")

VersionKey = tuple[tuple[int, ...], int, tuple[tuple[int, int | str], ...]]


def version_key(text: str) -> VersionKey | None:
    """The first version number in `text`, in semantic versioning's order: its numbers (`1.10` after `1.9`,
    `~> 5.1` as 5.1.0), then a pre-release before its release (`5.0.0-rc.1` < `5.0.0`), pre-release parts
    numeric before text and in order; a build suffix (`+...`) is ignored. None when `text` holds no number."""
    found = _VERSION_NUMBER.search(text or "")
    if found is None:
        return None
    numbers = [int(part) for part in found.group(1).split(".")]
    release = tuple(numbers + [0] * (3 - len(numbers)))
    if found.group(2) is None:
        return release, 1, ()
    parts = tuple((0, int(p)) if p.isdigit() else (1, p) for p in found.group(2).split("."))
    return release, 0, parts
