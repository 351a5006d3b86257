"""Runs, plans, applies, configuration versions and variables as TFC API resources."""

from __future__ import annotations

from typing import Any

from terrace.domain import clock
from terrace.domain.runs import PhaseState, Run
from terrace.services.runs.configuration_versions import ConfigurationVersion
from terrace.services.workspaces.variables import Variable
from terrace.web.jsonapi import ref, resource


def run(r: Run, *, position: int, permissions: dict[str, bool], cooloff_s: float) -> dict[str, Any]:
    actions = r.actions(cooloff_s, clock.epoch())
    return resource(
        "runs",
        r.id,
        {
            "status": r.status,
            "status-timestamps": r.status_timestamps,
            "created-at": r.created_at,
            "message": r.message,
            "source": r.source,
            "trigger-reason": "manual",
            "has-changes": r.has_changes,
            "is-destroy": r.is_destroy,
            "refresh": r.refresh,
            "refresh-only": r.refresh_only,
            "target-addrs": r.target_addrs or None,
            "replace-addrs": r.replace_addrs or None,
            "auto-apply": r.auto_apply,
            "plan-only": r.plan_only,
            "save-plan": r.save_plan,
            "allow-empty-apply": r.allow_empty_apply,
            "allow-config-generation": False,
            "terraform-version": r.terraform_version,
            "variables": r.variables,
            "position-in-queue": position,
            "canceled-at": r.status_timestamps.get("canceled-at"),
            "error-message": r.error_message,
            "actions": actions,
            "permissions": {
                "can-apply": permissions.get("can-queue-apply", False),
                "can-cancel": permissions.get("can-queue-run", False),
                "can-discard": permissions.get("can-queue-apply", False),
                "can-force-cancel": permissions.get("can-queue-run", False),
                "can-force-execute": False,
                "can-comment": False,
            },
            "resource-additions": r.plan.additions,
            "resource-changes": r.plan.changes,
            "resource-destructions": r.plan.destructions,
            "resource-imports": r.plan.imports,
        },
        {
            "workspace": ref("workspaces", r.workspace_id),
            "configuration-version": ref("configuration-versions", r.configuration_version_id),
            "plan": ref("plans", r.plan.id),
            "apply": ref("applies", r.apply.id),
            "created-by": {"data": None, "meta": {"username": r.created_by}},
            "cost-estimate": {"data": None},
            "policy-checks": {"data": []},
            "task-stages": {"data": []},
            "run-events": {"links": {"related": f"/api/v2/runs/{r.id}/run-events"}},
            "comments": {"data": []},
        },
        links={"self": f"/api/v2/runs/{r.id}"},
    )


def _phase_attrs(p: PhaseState, log_url: str | None) -> dict[str, Any]:
    return {
        "status": p.status,
        "status-timestamps": p.timestamps,
        "log-read-url": log_url,
        "resource-additions": p.additions,
        "resource-changes": p.changes,
        "resource-destructions": p.destructions,
        "resource-imports": p.imports,
    }


def plan(r: Run, log_url: str | None) -> dict[str, Any]:
    attrs = _phase_attrs(r.plan, log_url)
    attrs.update(
        {"has-changes": r.plan.has_changes, "execution-details": {"mode": "remote"}, "generated-configuration": False}
    )
    return resource(
        "plans",
        r.plan.id,
        attrs,
        {"run": ref("runs", r.id), "exports": {"data": []}},
        links={"self": f"/api/v2/plans/{r.plan.id}", "json-output": f"/api/v2/plans/{r.plan.id}/json-output"},
    )


def apply(r: Run, log_url: str | None) -> dict[str, Any]:
    attrs = _phase_attrs(r.apply, log_url)
    attrs["execution-details"] = {"mode": "remote"}
    return resource(
        "applies",
        r.apply.id,
        attrs,
        {"run": ref("runs", r.id), "state-versions": {"data": []}},
        links={"self": f"/api/v2/applies/{r.apply.id}"},
    )


def configuration_version(cv: ConfigurationVersion, upload_url: str | None) -> dict[str, Any]:
    return resource(
        "configuration-versions",
        cv.id,
        {
            "auto-queue-runs": cv.auto_queue_runs,
            "error": "errored" if cv.error_message else None,
            "error-message": cv.error_message,
            "source": cv.source,
            "speculative": cv.speculative,
            "provisional": cv.provisional,
            "status": cv.status,
            "status-timestamps": cv.status_timestamps,
            "upload-url": upload_url,
            "changed-files": [],
            "size": cv.size,
        },
        {"ingress-attributes": {"data": None}, "workspace": ref("workspaces", cv.workspace_id)},
        links={
            "self": f"/api/v2/configuration-versions/{cv.id}",
            "download": f"/api/v2/configuration-versions/{cv.id}/download",
        },
    )


def variable(v: Variable) -> dict[str, Any]:
    return resource(
        "vars",
        v.id,
        {
            "key": v.key,
            "value": v.value,
            "sensitive": v.sensitive,
            "category": v.category,
            "hcl": v.hcl,
            "description": v.description,
            "created-at": v.created_at,
            "version-id": v.version_id,
        },
        {
            "configurable": {
                "data": {"type": "workspaces", "id": v.workspace_id},
                "links": {"related": f"/api/v2/workspaces/{v.workspace_id}"},
            }
        },
        links={"self": f"/api/v2/workspaces/{v.workspace_id}/vars/{v.id}"},
    )
