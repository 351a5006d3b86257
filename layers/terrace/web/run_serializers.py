"""Runs, plans, applies, configuration versions and variables as TFC API resources."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from terrace.domain import clock
from terrace.domain.configuration_versions import ConfigurationVersion
from terrace.domain.runs import PhaseState, Run
from terrace.domain.variables import StoredVariable, Variable
from terrace.web.jsonapi import ref, refs, resource


def _moment(epoch_s: float | None) -> str | None:
    return None if epoch_s is None else clock.iso(datetime.fromtimestamp(epoch_s, UTC))


def run(
    r: Run,
    *,
    position: int,
    permissions: dict[str, bool],
    cooloff_s: float,
    users: dict[str, str] | None = None,
    event_ids: list[str] | None = None,
    policy_check_ids: list[str] | None = None,
) -> dict[str, Any]:
    """A run; `users` maps usernames to user ids (created-by, confirmed-by), `event_ids` its run events
    (when given: lists only link to them), `policy_check_ids` its policy checks."""
    actions = r.actions(cooloff_s, clock.epoch())
    users = users or {}
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
            "invoke-action-addrs": r.invoke_action_addrs or None,
            "auto-apply": r.auto_apply,
            "plan-only": r.plan_only,
            "save-plan": r.save_plan,
            "allow-empty-apply": r.allow_empty_apply,
            "allow-config-generation": False,
            "terraform-version": r.terraform_version,
            "variables": r.variables or None,
            "position-in-queue": position,
            "canceled-at": r.status_timestamps.get("canceled-at"),
            "force-cancel-available-at": _moment(
                None if r.cancel_requested_at is None else r.cancel_requested_at + cooloff_s
            ),
            "error-message": r.error_message,
            "actions": actions,
            "permissions": {
                "can-apply": permissions.get("can-queue-apply", False),
                "can-cancel": permissions.get("can-queue-run", False),
                "can-discard": permissions.get("can-queue-apply", False),
                "can-force-cancel": permissions.get("can-queue-run", False),
                "can-force-execute": permissions.get("can-queue-apply", False),
                "can-comment": permissions.get("can-queue-run", False),
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
            "created-by": {**ref("users", users.get(r.created_by)), "meta": {"username": r.created_by}},
            "confirmed-by": ref("users", users.get(r.confirmed_by or "")),
            "cost-estimate": ref("cost-estimates", r.cost_estimate.id if r.cost_estimate else None),
            "policy-checks": {
                **refs("policy-checks", policy_check_ids or []),
                "links": {"related": f"/api/v2/runs/{r.id}/policy-checks"},
            },
            "task-stages": {
                **refs("task-stages", r.task_stage_ids),
                "links": {"related": f"/api/v2/runs/{r.id}/task-stages"},
            },
            "run-events": {
                **(refs("run-events", event_ids) if event_ids is not None else {}),
                "links": {"related": f"/api/v2/runs/{r.id}/run-events"},
            },
            "comments": {**refs("comments", r.comment_ids), "links": {"related": f"/api/v2/runs/{r.id}/comments"}},
        },
        links={"self": f"/api/v2/runs/{r.id}"},
    )


def cost_estimate(r: Run) -> dict[str, Any]:
    assert r.cost_estimate is not None
    ce = r.cost_estimate
    return resource(
        "cost-estimates",
        ce.id,
        {
            "status": ce.status,
            "status-timestamps": ce.timestamps,
            "error-message": ce.error_message,
            "resources-count": ce.resources_count,
            "matched-resources-count": ce.matched_resources_count,
            "unmatched-resources-count": ce.unmatched_resources_count,
            "prior-monthly-cost": ce.prior_monthly_cost,
            "proposed-monthly-cost": ce.proposed_monthly_cost,
            "delta-monthly-cost": ce.delta_monthly_cost,
        },
        {"run": ref("runs", r.id)},
        links={"self": f"/api/v2/cost-estimates/{ce.id}"},
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
    relationships = {"run": ref("runs", r.id), "exports": {"data": []}}
    links = {"self": f"/api/v2/plans/{r.plan.id}", "json-output": f"/api/v2/plans/{r.plan.id}/json-output"}
    if r.plan.hyok_data_key_id:  # Hold Your Own Key: the plan file is sealed; the JSON plan kept is sanitized
        relationships["hyok-encrypted-data-key"] = ref("hyok-encrypted-data-keys", r.plan.hyok_data_key_id)
        links["sanitized-plan"] = f"/api/v2/plans/{r.plan.id}/sanitized-plan"
    return resource("plans", r.plan.id, attrs, relationships, links=links)


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
        {
            "ingress-attributes": ref("ingress-attributes", _ingress_id(cv) if cv.ingress else None),
            "workspace": ref("workspaces", cv.workspace_id),
        },  # fmt: skip
        links={
            "self": f"/api/v2/configuration-versions/{cv.id}",
            "download": f"/api/v2/configuration-versions/{cv.id}/download",
        },
    )


def _ingress_id(cv: ConfigurationVersion) -> str:
    return "ia-" + cv.id.split("-", 1)[1]


def ingress_attributes(cv: ConfigurationVersion) -> dict[str, Any] | None:
    """HCP's `ingress-attributes` of a version made from a forge's commit (services/vcs/ingress.py)."""
    if not cv.ingress:
        return None
    link = {"self": f"/api/v2/configuration-versions/{cv.id}/ingress-attributes"}
    return resource("ingress-attributes", _ingress_id(cv), dict(cv.ingress), links=link)


def variable_attributes(v: StoredVariable) -> dict[str, Any]:
    """A variable's attributes as TFC shows them (a workspace's, a set's, an effective one): `value` is None when
    sensitive."""
    return {
        "key": v.key,
        "value": v.value,
        "sensitive": v.sensitive,
        "category": v.category,
        "hcl": v.hcl,
        "description": v.description,
        "created-at": v.created_at,
        "version-id": v.version_id,
    }


def variable(v: Variable) -> dict[str, Any]:
    return resource(
        "vars",
        v.id,
        variable_attributes(v),
        {
            "configurable": {
                "data": {"type": "workspaces", "id": v.workspace_id},
                "links": {"related": f"/api/v2/workspaces/{v.workspace_id}"},
            }
        },
        links={"self": f"/api/v2/workspaces/{v.workspace_id}/vars/{v.id}"},
    )
