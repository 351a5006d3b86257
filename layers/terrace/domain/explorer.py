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
        "providers": STR,
        "provider_count": INT,
        "modules": STR,
        "module_count": INT,
        "workspace_created_at": TIME,
        "workspace_updated_at": TIME,
    },
    TF_VERSIONS: {"version": VERSION, "workspace_count": INT, "workspaces": STR},
    PROVIDERS: {"name": STR, "source": STR, "version": VERSION, "workspace_count": INT, "workspaces": STR},
    MODULES: {"name": STR, "source": STR, "version": VERSION, "workspace_count": INT, "workspaces": STR},
}


@dataclass(frozen=True)
class Use:
    """A module or provider a workspace uses: its name, its source as written, its version (exact when known,
    else the configuration's constraint; empty when neither says)."""

    name: str
    source: str
    version: str = ""

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
            found[key] = Use(key.split("/")[-1], key)
    return sorted(found.values(), key=lambda u: (u.source, u.version))


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
        "vcs_repo_identifier": None,
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
        "providers": ", ".join(u.label() for u in providers),
        "provider_count": len(providers),
        "modules": ", ".join(u.label() for u in summary.modules),
        "module_count": len(summary.modules),
        "workspace_created_at": ws.created_at,
        "workspace_updated_at": ws.updated_at,
    }


def tf_version_rows(facts: Iterable[WorkspaceFacts]) -> list[dict[str, Any]]:
    groups: dict[str, list[str]] = {}
    for f in facts:
        groups.setdefault(f.workspace.terraform_version, []).append(f.workspace.name)
    return [
        {"id": f"tfv-{version}", "version": version, **_used_by(names)} for version, names in sorted(groups.items())
    ]


def use_rows(facts: Iterable[WorkspaceFacts], kind: str) -> list[dict[str, Any]]:
    """One row per (source, version) of a provider (`PROVIDERS`) or a module (`MODULES`) in use."""
    groups: dict[tuple[str, str], tuple[Use, list[str]]] = {}
    for f in facts:
        uses = providers_of(f.summary) if kind == PROVIDERS else list(f.summary.modules)
        seen: set[tuple[str, str]] = set()
        for use in uses:
            key = (use.source, use.version)
            if key in seen:
                continue
            seen.add(key)
            groups.setdefault(key, (use, []))[1].append(f.workspace.name)
    prefix = "prov" if kind == PROVIDERS else "mod"
    return [
        {
            "id": f"{prefix}-{use.source}:{use.version}",
            "name": use.name,
            "source": use.source,
            "version": use.version,
            **_used_by(names),
        }
        for (_, _), (use, names) in sorted(groups.items())
    ]


def _used_by(names: list[str]) -> dict[str, Any]:
    ordered = sorted(set(names))
    return {"workspace_count": len(ordered), "workspaces": ", ".join(ordered)}


_VERSION_NUMBER = re.compile(r"\d+(?:\.\d+)*")


def version_key(text: str) -> tuple[int, ...] | None:
    """The first version number in `text` as a tuple (`~> 5.1` -> (5, 1, 0)); None when it holds none."""
    found = _VERSION_NUMBER.search(text or "")
    if found is None:
        return None
    numbers = [int(part) for part in found.group(0).split(".")[:4]]
    return tuple(numbers + [0] * (3 - len(numbers)))
