"""Domain objects -> JSON:API resources for the TFC API. Attribute names follow HCP Terraform exactly."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from terrace.domain import retention
    from terrace.domain.organizations import Organization
    from terrace.domain.principal import Principal
    from terrace.domain.projects import Project
    from terrace.domain.state_index import StoredOutput
    from terrace.domain.tags import ReservedTagKey, Tag
    from terrace.domain.tokens import Token
    from terrace.domain.users import User
    from terrace.domain.workspace import Workspace

from terrace.web.admin_serializers import avatar_url
from terrace.web.jsonapi import ref, resource


def organization(org: Organization, permissions: dict[str, bool], primary_hyok_id: str | None = None) -> dict[str, Any]:
    from terrace.domain import retention
    from terrace.domain.agent_pools import DEFAULT_POOL_SETTING
    from terrace.domain.projects import default_project_id

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
            "assessments-enforced": org.settings.get("assessments-enforced", False) is True,
            "enforce-hyok": org.settings.get("enforce-hyok", False) is True,
            "speculative-plan-management-enabled": org.settings.get("speculative-plan-management-enabled", True)
            is not False,
            "fork-pull-request-plans-enabled": org.settings.get("fork-pull-request-plans-enabled", False) is True,
            "speculative-plan-comments-enabled": org.settings.get("speculative-plan-comments-enabled", False) is True,
            "aggregated-commit-status-enabled": org.settings.get("aggregated-commit-status-enabled", False) is True,
            "user-tokens-enabled": org.view.user_tokens_enabled,
            "allow-force-delete-workspaces": org.allow_force_delete_workspaces,
            "avatar-url": None,
            "owners-team-saml-role-id": None,
            "saml-enabled": False,
            "two-factor-conformant": True,
            "trial-expires-at": None,
            "plan-identifier": "terrace",
            "permissions": permissions,
        },
        relationships={
            **retention_relationship(retention.of_organization(org)),
            "default-agent-pool": ref("agent-pools", org.settings.get(DEFAULT_POOL_SETTING) or None),
            "default-project": ref("projects", default_project_id(org.key)),
            "primary-hyok-configuration": ref("hyok-configurations", primary_hyok_id),
        },
        links={"self": f"/api/v2/organizations/{org.name}"},
    )


def retention_relationship(policy: retention.RetentionPolicy | None) -> dict[str, Any]:
    """The `data-retention-policy` relationship, only when a policy is set (go-tfe reads its absence as none)."""
    if policy is None:
        return {}
    return {"data-retention-policy": {"data": {"type": policy.resource_type, "id": policy.id}}}


def entitlement_set(org: Organization) -> dict[str, Any]:
    """What Terrace has, less what the organization's feature set withholds (`domain/entitlements.py`)."""
    from terrace.domain.entitlements import entitlements

    return resource(
        "entitlement-sets",
        org.id,
        {**entitlements(org.settings), "user-limit": None},
        links={"self": f"/api/v2/entitlement-sets/{org.id}"},
    )


def workspace(
    ws: Workspace, permissions: dict[str, bool], org: Organization, project: Project | None = None, tool: str = ""
) -> dict[str, Any]:
    """`org` is the workspace's organization: its current name; the execution mode and agent pool it inherits come
    from its `project` when that sets them, else from `org`; `tool` the one its runs use (`WorkspaceService.tool_of`,
    `iac-platform`: Terrace's extension)."""
    from terrace.domain import retention
    from terrace.domain.agent_pools import execution_mode_of, pool_of
    from terrace.domain.projects import default_project_id
    from terrace.services.workspaces.locking import describe_holder

    lock = ws.lock
    attributes: dict[str, Any] = {
        "name": ws.name,
        "description": ws.description,
        "created-at": ws.created_at,
        "updated-at": ws.updated_at,
        "environment": "default",
        "execution-mode": execution_mode_of(ws, org, project),
        "agent-pool-id": pool_of(ws, org, project),
        "operations": execution_mode_of(ws, org, project) != "local",
        "auto-apply": ws.auto_apply,
        "auto-apply-run-trigger": ws.auto_apply_run_trigger,
        "terraform-version": ws.terraform_version,
        "iac-platform": tool or ws.tool or None,
        "working-directory": ws.working_directory,
        "global-remote-state": ws.global_remote_state,
        "project-remote-state": ws.project_remote_state,
        "queue-all-runs": ws.queue_all_runs,
        "speculative-enabled": ws.speculative_enabled,
        "allow-destroy-plan": ws.allow_destroy_plan,
        "structured-run-output-enabled": bool(ws.extra.get("structured-run-output-enabled", False)),
        "file-triggers-enabled": bool(ws.extra.get("file-triggers-enabled", True)),  # HCP's default
        "trigger-prefixes": ws.extra.get("trigger-prefixes", []),
        "trigger-patterns": ws.extra.get("trigger-patterns", []),
        "assessments-enabled": bool(ws.extra.get("assessments-enabled", False)),
        "hyok-enabled": ws.extra.get("hyok-enabled") is True,  # Hold Your Own Key (services/state/hyok_state.py)
        "source": ws.extra.get("source", "tfe-api"),  # tfe-module: provisioned from a no-code module
        "source-module-id": ws.extra.get("source-module-id"),
        "source-name": ws.extra.get("source-name"),
        "source-url": ws.extra.get("source-url"),
        "tag-names": list(ws.tag_names),
        "vcs-repo": ws.extra.get("vcs-repo"),  # services/vcs/connections.py
        "vcs-repo-identifier": (ws.extra.get("vcs-repo") or {}).get("identifier"),
        "locked": lock is not None,
        "locked-reason": lock.reason if lock else "",
        "resource-count": ws.resource_count,
        "apply-duration-average": None,
        "plan-duration-average": None,
        "policy-check-failures": None,
        "run-failures": None,
        "workspace-kpis-runs-count": ws.runs_count,  # go-tfe's Workspace.RunsCount
        "latest-change-at": ws.updated_at,
        "auto-destroy-at": ws.auto_destroy_at,
        "auto-destroy-activity-duration": ws.auto_destroy_activity_duration,
        "setting-overwrites": {
            "execution-mode": ws.overwrites_execution_mode,
            "agent-pool": ws.overwrites_execution_mode,
        },
        "permissions": permissions,
        "actions": {"is-destroyable": permissions.get("can-destroy", False)},
    }
    locked_by: dict[str, Any] = {"data": None}
    if lock is not None:
        kind = {"run": "runs", "user": "users", "team": "teams"}.get(lock.holder_kind, "users")
        locked_by = {"data": {"type": kind, "id": lock.holder_id}, "meta": {"holder": describe_holder(lock)}}
    relationships = {
        "organization": ref("organizations", org.name),
        "project": ref("projects", ws.project_id or default_project_id(ws.organization)),
        "current-run": ref("runs", ws.current_run_id),
        "latest-run": ref("runs", ws.latest_run_id),
        "current-state-version": ref("state-versions", ws.current_state_version_id),
        "current-configuration-version": ref("configuration-versions", ws.extra.get("current_cv_id")),
        "ssh-key": ref("ssh-keys", ws.extra.get("ssh_key_id")),
        "locked-by": locked_by,
        "agent-pool": ref("agent-pools", pool_of(ws, org, project)),
        "readme": {"data": None},
        "outputs": {"data": []},
        "remote-state-consumers": {
            "links": {"related": f"/api/v2/workspaces/{ws.id}/relationships/remote-state-consumers"}
        },
        "tags": {"links": {"related": f"/api/v2/workspaces/{ws.id}/relationships/tags"}},
        "tag-bindings": {"links": {"related": f"/api/v2/workspaces/{ws.id}/tag-bindings"}},
        "effective-tag-bindings": {"links": {"related": f"/api/v2/workspaces/{ws.id}/effective-tag-bindings"}},
        **retention_relationship(retention.of_workspace(ws)),
    }
    if ws.extra.get("hyok-data-key"):  # Hold Your Own Key: its current state's data key (services/state/current.py)
        data_key = ref("hyok-encrypted-data-keys", str(ws.extra["hyok-data-key"]))
        relationships["hyok-data-key-for-encryption"] = relationships["hyok-encrypted-data-key"] = data_key
    return resource(
        "workspaces",
        ws.id,
        attributes,
        relationships,
        links={
            "self": f"/api/v2/organizations/{org.name}/workspaces/{ws.name}",
            "self-html": f"/app/{org.name}/workspaces/{ws.name}",
        },
    )


def workspace_output(out: StoredOutput) -> dict[str, Any]:
    """A current output as a workspace's `outputs` relationship includes it (sensitive values withheld)."""
    return resource(
        "workspace-outputs",
        out.id,
        {
            "name": out.name,
            "sensitive": out.sensitive,
            "output-type": out.type,
            "value": None if out.sensitive else out.value,
        },
    )


def tag(t: Tag) -> dict[str, Any]:
    return resource(
        "tags",
        t.id,
        {"name": t.name, "instance-count": t.instance_count, "created-at": t.created_at},
        relationships={"organization": ref("organizations", t.organization)},
    )


def tag_binding(ws: Workspace, key: str, value: str, *, effective: bool = False) -> dict[str, Any]:
    if effective:
        return resource("effective-tag-bindings", f"etb-{ws.id}-{key}", {"key": key, "value": value})
    return resource("tag-bindings", f"tb-{ws.id}-{key}", {"key": key, "value": value})


def reserved_tag_key(r: ReservedTagKey) -> dict[str, Any]:
    attributes = {"key": r.key, "disable-overrides": r.disable_overrides, "created-at": r.created_at,
                  "updated-at": r.updated_at, "created_at": r.created_at, "updated_at": r.updated_at}  # fmt: skip
    return resource("reserved-tag-keys", r.id, attributes)


def user(u: User, scim: bool = False) -> dict[str, Any]:
    """`scim`: SCIM provisioning is on, and the user's SCIM attributes are shown (TFE omits them otherwise)."""
    document = resource(
        "users",
        u.id,
        {
            "username": u.username,
            "email": u.email,
            "is-service-account": False,
            "is-site-admin": u.site_admin,
            "is-admin": u.site_admin,
            "is-suspended": u.suspended,
            "avatar-url": avatar_url(u.email or u.username),
            "two-factor": {"enabled": False, "verified": False},
            "unconfirmed-email": None,
            "v2-only": True,
            "auth-method": "tfc",
            "permissions": {
                "can-create-organizations": True,
                "can-change-email": True,
                "can-change-username": True,
                "can-manage-user-tokens": True,
                "can-view-2fa-settings": False,
                "can-manage-hcp-account": False,
            },
        },
        relationships={"authentication-tokens": {"links": {"related": f"/api/v2/users/{u.id}/authentication-tokens"}}},
        links={"self": f"/api/v2/users/{u.id}"},
    )
    if scim:
        document["attributes"].update({"is-scim-managed": bool(u.scim_username),
                                       "scim-username": u.scim_username or None,
                                       "scim-updated-at": u.scim_updated_at or None})  # fmt: skip
    return document


def principal_as_user(p: Principal, organization: Organization | None = None) -> dict[str, Any]:
    """account/details for a non-user token: a service account. An organization token's is `api-org-<current
    name>`, as TFC names it (the token's subject is the organization's storage key, never shown)."""
    username = p.username if organization is None else f"api-org-{organization.name}"
    subject_id = p.subject_id if organization is None else username
    return resource(
        "users",
        subject_id,
        {
            "username": username,
            "email": "",
            "is-service-account": True,
            "is-site-admin": p.site_admin,
            "avatar-url": avatar_url(username),
            "two-factor": {"enabled": False, "verified": False},
            "v2-only": True,
            "permissions": {"can-create-organizations": False, "can-manage-user-tokens": False},
        },
        links={"self": f"/api/v2/users/{subject_id}"},
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
        relationships={"created-by": _creator(t)},
    )


def _creator(t: Token) -> dict[str, Any]:
    """Who created a token: a user's own token is its user's; another kind its recorded creator (null for one
    from before creators were recorded)."""
    if t.kind.value == "user":
        return ref("users", t.subject_id)
    return {"data": {"type": t.created_by[0], "id": t.created_by[1]} if t.created_by else None}
