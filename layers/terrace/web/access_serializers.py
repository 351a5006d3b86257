"""JSON:API documents of teams, their tokens, memberships, projects and team access (go-tfe's shapes).

Teams, memberships and projects store their organization's key; `organization` is its current name (what
`OrganizationService.name_of` answers), the only thing documents show."""

from __future__ import annotations

from typing import Any

from terrace.domain.agent_pools import DEFAULT_POOL_SETTING
from terrace.domain.memberships import Membership
from terrace.domain.organizations import Organization
from terrace.domain.projects import Project
from terrace.domain.team_access import Grant
from terrace.domain.teams import Team
from terrace.domain.tokens import Token
from terrace.web.jsonapi import ref, refs, resource


def team_token(t: Token, secret: str | None = None) -> dict[str, Any]:
    """A team's token as HCP Terraform shows it: a legacy token's description is null, the secret only in the
    creation's answer; `created-by` a user, team or organization (null for a token from before it was recorded)."""
    creator = {"data": {"type": t.created_by[0], "id": t.created_by[1]} if t.created_by else None}
    attributes = {"created-at": t.created_at, "last-used-at": t.last_used_at, "expired-at": t.expires_at,
                  "description": t.description if t.named else None, "token": secret}  # fmt: skip
    relationships = {"team": ref("teams", t.subject_id), "created-by": creator}
    return resource("authentication-tokens", t.id, attributes, relationships=relationships)


def team(t: Team, organization: str, membership_ids: list[str], can_manage: bool) -> dict[str, Any]:
    return resource(
        "teams",
        t.id,
        {
            "name": t.name,
            "organization-access": t.org_access,
            "visibility": t.visibility,
            "sso-team-id": t.sso_team_id or None,
            "users-count": len(t.users),
            "is-unified": False,
            "allow-member-token-management": t.allow_member_token_management,
            "scim-linked": t.scim is not None,
            "scim-sync-paused": t.scim.sync_paused if t.scim else False,
            "scim-group-name": t.scim.group_name if t.scim else None,
            "scim-updated-at": t.scim.updated_at if t.scim else None,
            "permissions": {
                "can-update-membership": can_manage,
                "can-destroy": can_manage and not t.owners,
                "can-update-organization-access": can_manage and not t.owners,
                "can-update-api-token": can_manage,
                "can-update-visibility": can_manage,
                "can-update-name": can_manage and not t.owners,
                "can-update-sso-team-id": can_manage,
                "can-update-member-token-management": can_manage,
                "can-view-api-token": can_manage,
            },
        },
        relationships={
            "organization": ref("organizations", organization),
            "users": refs("users", list(t.users)),
            "organization-memberships": refs("organization-memberships", membership_ids),
        },
        links={"self": f"/api/v2/teams/{t.id}"},
    )


def membership(m: Membership, organization: str, team_ids: list[str]) -> dict[str, Any]:
    return resource(
        "organization-memberships",
        m.id,
        {"status": m.status, "email": m.email},
        relationships={
            "organization": ref("organizations", organization),
            "user": ref("users", m.user_id),
            "teams": refs("teams", team_ids),
        },
    )


def project(p: Project, org: Organization) -> dict[str, Any]:
    """A project with its execution defaults as its workspaces inherit them (its own, else its organization's) and
    its tag bindings (a project inherits none, so its effective bindings are its own)."""
    own = p.default_execution_mode is not None
    mode = p.execution_mode(org.default_execution_mode)
    pool = p.default_agent_pool_id if own else (org.settings.get(DEFAULT_POOL_SETTING) if mode == "agent" else None)
    return resource(
        "projects",
        p.id,
        {"name": p.name, "description": p.description, "created-at": p.created_at, "is-default": p.is_default,
         "auto-destroy-activity-duration": p.auto_destroy_activity_duration, "default-execution-mode": mode,
         "is-unified": False,
         "setting-overwrites": {"default-execution-mode": own, "default-agent-pool": own},
         "permissions": {"can-read": True, "can-update": True, "can-destroy": not p.is_default,
                         "can-create-workspace": True, "can-move-workspace": True}},
        relationships={"organization": ref("organizations", org.name),
                       "default-agent-pool": ref("agent-pools", str(pool) if pool else None),
                       "effective-tag-bindings": {
                           "data": [{"type": "effective-tag-bindings", "id": binding_id(p.id, k)}
                                    for k, _ in p.tag_bindings],
                           "links": {"related": f"/api/v2/projects/{p.id}/effective-tag-bindings"}},
                       "tag-bindings": {"links": {"related": f"/api/v2/projects/{p.id}/tag-bindings"}}},
        links={"self": f"/api/v2/projects/{p.id}"},
    )  # fmt: skip


def binding_id(owner_id: str, key: str) -> str:
    return f"tb-{owner_id}-{key}"


def project_bindings(p: Project, *, effective: bool = False) -> list[dict[str, Any]]:
    kind = "effective-tag-bindings" if effective else "tag-bindings"
    return [resource(kind, binding_id(p.id, k), {"key": k, "value": v}) for k, v in p.tag_bindings]


def team_workspace(g: Grant) -> dict[str, Any]:
    return resource(
        "team-workspaces",
        g.id,
        {"access": g.access, **g.workspace_fields},
        relationships={"team": ref("teams", g.team_id), "workspace": ref("workspaces", g.target_id)},
        links={"self": f"/api/v2/team-workspaces/{g.id}"},
    )


def team_project(g: Grant) -> dict[str, Any]:
    custom = g.access == "custom"
    return resource(
        "team-projects",
        g.id,
        {
            "access": g.access,
            "project-access": g.fields["project-access"] if custom else None,
            "workspace-access": g.fields["workspace-access"] if custom else None,
        },
        relationships={"team": ref("teams", g.team_id), "project": ref("projects", g.target_id)},
        links={"self": f"/api/v2/team-projects/{g.id}"},
    )
