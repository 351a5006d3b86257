"""JSON:API documents of policy as code, as go-tfe reads them (policy.go, policy_set.go, policy_set_version.go,
policy_set_parameter.go, policy_evaluation.go, policy_check.go)."""

from __future__ import annotations

from typing import Any

from terrace.domain.policies import Policy, PolicySet, PolicySetParameter, PolicySetVersion
from terrace.domain.policy_evaluations import PolicyCheck, PolicyEvaluation, PolicySetOutcome
from terrace.domain.projects import Project
from terrace.domain.workspace import Workspace
from terrace.web.jsonapi import ref, refs, resource


def policy(p: Policy, set_count: int) -> dict[str, Any]:
    return resource(
        "policies",
        p.id,
        {
            "name": p.name,
            "description": p.description,
            "kind": p.kind,
            "query": p.query,
            "enforcement-level": p.enforcement_level,
            # HCP lists a policy's enforcement once it has content
            "enforce": [{"path": p.enforce_path, "mode": p.enforcement_level}] if p.has_content else [],
            "policy-set-count": set_count,
            "updated-at": p.updated_at,
        },
        {"organization": ref("organizations", p.organization)},
        links={
            "self": f"/api/v2/policies/{p.id}",
            "upload": f"/api/v2/policies/{p.id}/upload",
            "download": f"/api/v2/policies/{p.id}/download",
        },
    )


def policy_set(s: PolicySet) -> dict[str, Any]:
    versioned = s.newest_version_id is not None
    return resource(
        "policy-sets",
        s.id,
        {
            "name": s.name,
            "description": s.description,
            "kind": s.kind,
            "global": s.global_,
            "overridable": s.overridable if s.kind == "opa" else None,
            "agent-enabled": s.agent_enabled,
            "policy-tool-version": s.policy_tool_version,
            "policies-path": s.policies_path,
            "policy-update-patterns": list(s.policy_update_pattern),
            "policy-update-pattern": list(s.policy_update_pattern),  # the name Terrace once answered with
            "tag-selectors": [
                {"tag-key": t.key, "tag-value": t.value, "is-exclude": t.exclude} for t in s.tag_selectors
            ],
            "versioned": versioned,
            "vcs-repo": s.vcs_repo,  # services/vcs/connections.py
            "policy-count": len(s.policy_ids),
            "workspace-count": len(s.workspace_ids),
            "project-count": len(s.project_ids),
            "created-at": s.created_at,
            "updated-at": s.updated_at,
        },
        {
            "organization": ref("organizations", s.organization),
            "policies": refs("policies", s.policy_ids),
            "workspaces": refs("workspaces", s.workspace_ids),
            "projects": refs("projects", s.project_ids),
            "workspace-exclusions": refs("workspaces", s.exclusion_ids),
            "project-exclusions": refs("projects", s.project_exclusion_ids),
            "newest-version": ref("policy-set-versions", s.newest_version_id),
            "current-version": ref("policy-set-versions", s.current_version_id),
        },
        links={"self": f"/api/v2/policy-sets/{s.id}"},
    )


def workspace_brief(ws: Workspace) -> dict[str, Any]:
    """An included workspace: its name and dates (the full document is `/workspaces/:id`)."""
    return resource(
        "workspaces",
        ws.id,
        {"name": ws.name, "created-at": ws.created_at, "updated-at": ws.updated_at, "description": ws.description},
        links={"self": f"/api/v2/workspaces/{ws.id}"},
    )


def project_brief(p: Project) -> dict[str, Any]:
    return resource("projects", p.id, {"name": p.name}, links={"self": f"/api/v2/projects/{p.id}"})


def version(v: PolicySetVersion, upload_url: str | None) -> dict[str, Any]:
    links: dict[str, Any] = {"self": f"/api/v2/policy-set-versions/{v.id}"}
    if upload_url:
        links["upload"] = upload_url
    return resource(
        "policy-set-versions",
        v.id,
        {
            "source": v.source,
            "status": v.status,
            "status-timestamps": v.status_timestamps,
            "error": v.error,
            "error-message": v.error_message,
            "created-at": v.created_at,
            "updated-at": v.updated_at,
            "ingress-attributes": v.ingress,
        },
        {"policy-set": ref("policy-sets", v.policy_set_id)},
        links=links,
    )


def parameter(p: PolicySetParameter) -> dict[str, Any]:
    return resource(
        "vars",
        p.id,
        {"key": p.key, "value": p.value, "sensitive": p.sensitive, "category": p.category},
        {
            "configurable": {
                **ref("policy-sets", p.policy_set_id),
                "links": {"related": f"/api/v2/policy-sets/{p.policy_set_id}"},
            }
        },
        links={"self": f"/api/v2/policy-sets/{p.policy_set_id}/parameters/{p.id}"},
    )


def evaluation(e: PolicyEvaluation) -> dict[str, Any]:
    return resource(
        "policy-evaluations",
        e.id,
        {
            "status": e.status,
            "policy-kind": "opa",
            "status-timestamps": e.status_timestamps,
            "result-count": e.result_count,
            "created-at": e.created_at,
            "updated-at": e.updated_at,
        },
        {
            "policy-attachable": {"data": {"id": e.stage_id, "type": "task-stages"}},
            "policy-set-outcomes": {"links": {"related": f"/api/v2/policy-evaluations/{e.id}/policy-set-outcomes"}},
        },
        links={"self": f"/api/v2/policy-evaluations/{e.id}"},
    )


def outcome(o: PolicySetOutcome) -> dict[str, Any]:
    return resource(
        "policy-set-outcomes",
        o.id,
        {
            "outcomes": list(o.outcomes),
            "error": o.error,
            "overridable": o.overridable,
            "policy-set-name": o.policy_set_name,
            "policy-set-description": o.policy_set_description,
            "result_count": o.result_count,
        },
        {"policy-evaluation": ref("policy-evaluations", o.evaluation_id)},
        links={"self": f"/api/v2/policy-set-outcomes/{o.id}"},
    )


def policy_check(c: PolicyCheck) -> dict[str, Any]:
    return resource(
        "policy-checks",
        c.id,
        {
            "result": c.result,
            "scope": "organization",
            "status": c.status,
            "status-timestamps": c.status_timestamps,
            "actions": {"is-overridable": c.overridable},
            "permissions": {"can-override": c.can_override},
        },
        {"run": ref("runs", c.run_id)},
        links={"output": f"/api/v2/policy-checks/{c.id}/output", "self": f"/api/v2/policy-checks/{c.id}"},
    )
