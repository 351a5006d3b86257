"""Domain objects -> JSON:API resources for the TFC API. Attribute names follow HCP Terraform exactly."""

from __future__ import annotations

from typing import Any

from terrace.domain.principal import Principal
from terrace.domain.workspace import Workspace
from terrace.services.access.accounts import Token, User
from terrace.services.access.organizations import Organization
from terrace.services.workspaces.locking import describe_holder
from terrace.web.jsonapi import ref, resource


def organization(org: Organization, permissions: dict[str, bool]) -> dict[str, Any]:
    return resource(
        "organizations",
        org.name,
        {
            "name": org.name,
            "external-id": org.id,
            "email": org.email,
            "created-at": org.created_at,
            "default-execution-mode": org.default_execution_mode,
            "collaborator-auth-policy": org.settings.get("collaborator-auth-policy", "password"),
            "session-timeout": org.settings.get("session-timeout"),
            "session-remember": org.settings.get("session-remember"),
            "cost-estimation-enabled": org.cost_estimation_enabled,
            "assessments-enforced": False,
            "allow-force-delete-workspaces": True,
            "owners-team-saml-role-id": None,
            "saml-enabled": False,
            "two-factor-conformant": True,
            "trial-expires-at": None,
            "plan-identifier": "terrace",
            "permissions": permissions,
        },
        relationships={},
        links={"self": f"/api/v2/organizations/{org.name}"},
    )


def entitlement_set(org: Organization) -> dict[str, Any]:
    return resource(
        "entitlement-sets",
        org.id,
        {
            "operations": True,
            "private-module-registry": False,
            "sentinel": False,
            "run-tasks": False,
            "state-storage": True,
            "teams": False,
            "vcs-integrations": False,
            "usage-reporting": False,
            "user-limit": None,
            "self-serve-billing": False,
            "audit-logging": False,
            "agents": True,
            "sso": False,
            "cost-estimation": True,
            "configuration-designer": False,
            "module-tests-generation": False,
            "global-run-tasks": False,
            "policy-enforcement": False,
        },
        links={"self": f"/api/v2/entitlement-sets/{org.id}"},
    )


def workspace(ws: Workspace, permissions: dict[str, bool]) -> dict[str, Any]:
    lock = ws.lock
    attributes: dict[str, Any] = {
        "name": ws.name,
        "description": ws.description,
        "created-at": ws.created_at,
        "updated-at": ws.updated_at,
        "environment": "default",
        "execution-mode": ws.execution_mode,
        "operations": ws.execution_mode != "local",
        "auto-apply": ws.auto_apply,
        "auto-apply-run-trigger": False,
        "terraform-version": ws.terraform_version,
        "working-directory": ws.working_directory,
        "global-remote-state": ws.global_remote_state,
        "queue-all-runs": ws.queue_all_runs,
        "speculative-enabled": ws.speculative_enabled,
        "allow-destroy-plan": ws.allow_destroy_plan,
        "structured-run-output-enabled": bool(ws.extra.get("structured-run-output-enabled", False)),
        "file-triggers-enabled": bool(ws.extra.get("file-triggers-enabled", False)),
        "trigger-prefixes": ws.extra.get("trigger-prefixes", []),
        "trigger-patterns": [],
        "assessments-enabled": False,
        "source": "tfe-api",
        "source-name": ws.extra.get("source-name"),
        "source-url": ws.extra.get("source-url"),
        "tag-names": list(ws.tag_names),
        "vcs-repo": None,
        "vcs-repo-identifier": None,
        "locked": lock is not None,
        "locked-reason": lock.reason if lock else "",
        "resource-count": ws.resource_count,
        "apply-duration-average": None,
        "plan-duration-average": None,
        "policy-check-failures": None,
        "run-failures": None,
        "workspace-kpis-runs-count": None,
        "latest-change-at": ws.updated_at,
        "auto-destroy-at": None,
        "setting-overwrites": {"execution-mode": False, "agent-pool": False},
        "permissions": permissions,
        "actions": {"is-destroyable": permissions.get("can-destroy", False)},
    }
    locked_by: dict[str, Any] = {"data": None}
    if lock is not None:
        kind = {"run": "runs", "user": "users"}.get(lock.holder_kind, "users")
        locked_by = {"data": {"type": kind, "id": lock.holder_id}, "meta": {"holder": describe_holder(lock)}}
    relationships = {
        "organization": ref("organizations", ws.organization),
        "current-run": ref("runs", ws.current_run_id),
        "latest-run": ref("runs", ws.latest_run_id),
        "current-state-version": ref("state-versions", ws.current_state_version_id),
        "current-configuration-version": ref("configuration-versions", ws.extra.get("current_cv_id")),
        "locked-by": locked_by,
        "project": {"data": None},
        "agent-pool": {"data": None},
        "readme": {"data": None},
        "outputs": {"data": []},
        "remote-state-consumers": {
            "links": {"related": f"/api/v2/workspaces/{ws.id}/relationships/remote-state-consumers"}
        },
        "tags": {"data": []},
    }
    return resource(
        "workspaces",
        ws.id,
        attributes,
        relationships,
        links={
            "self": f"/api/v2/organizations/{ws.organization}/workspaces/{ws.name}",
            "self-html": f"/app/{ws.organization}/workspaces/{ws.name}",
        },
    )


def user(u: User) -> dict[str, Any]:
    return resource(
        "users",
        u.id,
        {
            "username": u.username,
            "email": u.email,
            "is-service-account": False,
            "is-site-admin": u.site_admin,
            "avatar-url": "",
            "two-factor": {"enabled": False, "verified": False},
            "unconfirmed-email": None,
            "v2-only": True,
            "auth-method": "tfc",
            "permissions": {
                "can-create-organizations": True,
                "can-change-email": True,
                "can-change-username": False,
                "can-manage-user-tokens": True,
                "can-view-2fa-settings": False,
                "can-manage-hcp-account": False,
            },
        },
        relationships={"authentication-tokens": {"links": {"related": f"/api/v2/users/{u.id}/authentication-tokens"}}},
        links={"self": f"/api/v2/users/{u.id}"},
    )


def principal_as_user(p: Principal) -> dict[str, Any]:
    """account/details for a non-user token: a service account."""
    return resource(
        "users",
        p.subject_id,
        {
            "username": p.username,
            "email": "",
            "is-service-account": True,
            "is-site-admin": p.site_admin,
            "avatar-url": "",
            "two-factor": {"enabled": False, "verified": False},
            "v2-only": True,
            "permissions": {"can-create-organizations": False, "can-manage-user-tokens": False},
        },
        links={"self": f"/api/v2/users/{p.subject_id}"},
    )


def token(t: Token, secret: str | None = None) -> dict[str, Any]:
    return resource(
        "authentication-tokens",
        t.id,
        {
            "created-at": t.created_at,
            "last-used-at": t.last_used_at,
            "description": t.description,
            "expired-at": t.expires_at,
            "token": secret,
        },
        relationships={"created-by": ref("users", t.subject_id if t.kind.value == "user" else None)},
    )
