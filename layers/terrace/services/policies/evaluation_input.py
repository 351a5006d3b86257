"""What an OPA policy reads, as HCP Terraform gives it: `input.plan` (the run's JSON plan, as stored: sensitive
values redacted) and `input.run` (the run, its workspace and organization); Terrace adds `input.parameters`
(the policy set's parameters; HCP hands those to Sentinel only)."""

from __future__ import annotations

from typing import Any

from terrace.domain.organizations import Organization
from terrace.domain.runs import Run
from terrace.domain.workspace import Workspace


def run_input(run: Run, ws: Workspace, org: Organization, project_name: str | None) -> dict[str, Any]:
    return {
        "id": run.id,
        "created_at": run.created_at,
        "created_by": run.created_by,
        "message": run.message,
        "commit_sha": None,
        "is_destroy": run.is_destroy,
        "refresh": run.refresh,
        "refresh_only": run.refresh_only,
        "replace_addrs": list(run.replace_addrs) or None,
        "speculative": run.speculative,
        "target_addrs": list(run.target_addrs) or None,
        "variables": {v.get("key"): {"category": "terraform", "sensitive": False} for v in run.variables},
        "project": {"id": ws.project_id, "name": project_name},
        "organization": {"name": org.name},
        "workspace": {
            "id": ws.id,
            "name": ws.name,
            "created_at": ws.created_at,
            "description": ws.description,
            "execution_mode": ws.execution_mode,
            "auto_apply": ws.auto_apply,
            "tags": list(ws.tag_names),
            "working_directory": ws.working_directory,
            "vcs_repo": None,
        },
    }


def document(plan: Any, run: dict[str, Any], parameters: dict[str, str]) -> dict[str, Any]:
    return {"plan": plan, "run": run, "parameters": parameters}
