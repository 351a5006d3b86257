"""Resources of the site admin API (/api/v2/admin/...), as TFE's admin API shapes them."""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

from terrace.web.jsonapi import ref, refs, resource

if TYPE_CHECKING:  # annotations only: the accounts routes serialize users without loading the workspace model
    from terrace.domain.organizations import Organization
    from terrace.domain.users import User
    from terrace.domain.workspace import Workspace


def avatar_url(email: str) -> str:
    """A Gravatar URL from the address, as TFC gives (its default image when the address has none)."""
    digest = hashlib.md5(email.strip().lower().encode(), usedforsecurity=False).hexdigest()
    return f"https://www.gravatar.com/avatar/{digest}?s=100&d=mm"


def organization(org: Organization) -> dict[str, Any]:
    s = org.settings
    return resource(
        "organizations",
        org.name,
        {
            "name": org.name,
            "email": org.email,
            "notification-email": org.email,
            "external-id": org.id,
            "created-at": org.created_at,
            "access-beta-tools": bool(s.get("access-beta-tools", False)),
            "global-module-sharing": bool(s.get("global-module-sharing", False)),
            "global-provider-sharing": bool(s.get("global-provider-sharing", False)),
            "is-disabled": bool(s.get("is-disabled", False)),
            "sso-enabled": False,
            "terraform-build-worker-apply-timeout": s.get("terraform-build-worker-apply-timeout", "24h"),
            "terraform-build-worker-plan-timeout": s.get("terraform-build-worker-plan-timeout", "2h"),
            "apply-timeout": s.get("terraform-build-worker-apply-timeout", "24h"),
            "plan-timeout": s.get("terraform-build-worker-plan-timeout", "2h"),
            "terraform-worker-sudo-enabled": bool(s.get("terraform-worker-sudo-enabled", False)),
            "workspace-limit": s.get("workspace-limit"),
        },
        relationships={"owners": refs("users", list(org.owners))},
        links={"self": f"/api/v2/admin/organizations/{org.name}"},
    )


def user(u: User, organizations: list[str] | None = None) -> dict[str, Any]:
    relationships: dict[str, Any] = {}
    if organizations is not None:
        relationships["organizations"] = refs("organizations", organizations)
    return resource(
        "users",
        u.id,
        {
            "username": u.username,
            "email": u.email,
            "avatar-url": avatar_url(u.email or u.username),
            "two-factor": {"enabled": False, "verified": False},
            "is-admin": u.site_admin,
            "is-auditor": u.site_auditor,
            "is-suspended": u.suspended,
            "is-service-account": False,
            "created-at": u.created_at,
            "is-scim-managed": bool(u.scim_username),
            "scim-username": u.scim_username or None,
            "scim-updated-at": u.scim_updated_at or None,
        },
        relationships=relationships,
        links={"self": f"/api/v2/admin/users/{u.id}"},
    )


def owner(u: User) -> dict[str, Any]:
    """An organization owner as `included` in the admin organization list."""
    return resource("users", u.id, {"username": u.username, "email": u.email, "avatar-url": avatar_url(u.email)})


def workspace(ws: Workspace, organization: str) -> dict[str, Any]:
    """`organization` is the current name of the workspace's organization (ws.organization is its storage key)."""
    return resource(
        "workspaces",
        ws.id,
        {"name": ws.name, "locked": ws.locked, "vcs-repo": None, "created-at": ws.created_at},
        relationships={
            "organization": ref("organizations", organization),
            "current-run": ref("runs", ws.latest_run_id),
        },
        links={"self": f"/api/v2/admin/workspaces/{ws.id}"},
    )
