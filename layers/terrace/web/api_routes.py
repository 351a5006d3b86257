"""The routers of the TFC API, the runner, agent and registry protocols, in the order the app includes them, each
with the URL prefixes its routes start with.

An eager app includes them all at once. The API Lambda's lazy app (`create_app(..., lazy=True)`,
`web/lazy_routes.py`) imports and includes a router on the first request whose path starts with one of its
prefixes: FastAPI analyses each route as its module is imported, so a cold start that serves
`/api/v2/account/details` builds the accounts routes only. A path that starts with none of a router's prefixes
matches none of its routes (`tests/unit/test_lazy_routes.py` checks every route against its prefixes), and the
lazy app keeps the routes in this order, so every request is routed as the eager app routes it."""

from __future__ import annotations

import importlib
from collections.abc import Callable

from fastapi import APIRouter, FastAPI

ORGS, WORKSPACES = "/api/v2/organizations/", "/api/v2/workspaces/"

# (module of web/routers, its router, the prefixes of its routes' paths), in the app's order
API_ROUTERS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("discovery", "router", ("/.well-known/terraform.json", "/api/v2/ping", "/api/meta/")),
    ("organizations", "router", ("/api/v2/organizations",)),
    (
        "hyok",
        "router",
        (
            ORGS,
            "/api/v2/hyok-configurations/",
            "/api/v2/hyok-customer-key-versions/",
            "/api/v2/hyok-encrypted-data-keys/",
            "/api/v2/oidc-configurations/",
        ),
    ),
    ("audit_trail", "router", ("/api/v2/organization/audit-trail", ORGS, "/api/v2/admin/audit-trail")),
    ("workspaces", "router", (ORGS, WORKSPACES)),
    (
        "workspace_relations",
        "router",
        (ORGS, "/api/v2/reserved-tag-keys/", "/api/v2/reserved-tags/", "/api/v2/tags/", WORKSPACES),
    ),
    ("varsets", "router", (ORGS, "/api/v2/projects/", "/api/v2/varsets/", WORKSPACES)),
    ("accounts", "router", ("/api/v2/account/", "/api/v2/authentication-tokens/", "/api/v2/users/")),
    ("ssh_keys", "router", (ORGS, "/api/v2/ssh-keys/", WORKSPACES)),
    ("oauth", "router", ("/oauth/token",)),
    ("oauth_clients", "router", (ORGS, "/api/v2/oauth-clients/", "/api/v2/oauth-tokens/")),
    ("vcs_webhooks", "router", ("/api/vcs/webhooks/",)),
    ("vcs_app_webhooks", "router", ("/api/vcs/github-app/",)),
    ("github_app", "router", ("/api/v2/github-app/",)),
    ("retention", "router", (ORGS, WORKSPACES)),
    ("agent_pools", "router", ("/api/v2/agent-pools/", "/api/v2/agents/", ORGS)),
    ("workload_identity", "router", ("/.well-known/jwks", "/.well-known/openid-configuration")),
    ("scim", "router", ("/scim/v2/",)),
    ("agent_pools", "agent_router", ("/api/agent/",)),
    (
        "notifications",
        "router",
        ("/api/v2/notification-configurations/", "/api/v2/projects/", "/api/v2/teams/", WORKSPACES),
    ),
    ("teams", "router", (ORGS, "/api/v2/teams/")),
    ("memberships", "router", ("/api/v2/organization-memberships", ORGS)),
    ("projects", "router", (ORGS, "/api/v2/projects/", "/api/v2/team-projects", "/api/v2/team-workspaces")),
    ("state_versions", "router", ("/api/v2/state-version-outputs/", "/api/v2/state-versions", WORKSPACES)),
    ("resources", "router", (ORGS, WORKSPACES)),
    ("explorer", "router", (ORGS,)),
    ("change_requests", "router", (WORKSPACES,)),
    ("http_backend", "router", ("/state/v1/",)),
    ("configuration_versions", "router", ("/api/v2/configuration-versions/", "/api/v2/vars", WORKSPACES)),
    ("runs", "router", (ORGS, "/api/v2/runs", WORKSPACES)),
    (
        "run_stages",
        "router",
        ("/api/v2/comments/", "/api/v2/cost-estimates/", "/api/v2/run-events/", "/api/v2/runs/"),
    ),
    ("run_triggers", "router", ("/api/v2/run-triggers/", WORKSPACES)),
    ("task_stages", "router", ("/api/v2/runs/", "/api/v2/task-stages/")),
    ("run_tasks", "router", (ORGS, "/api/v2/task-results/", "/api/v2/tasks/", WORKSPACES)),
    ("phases", "router", ("/api/v2/applies/", "/api/v2/logs/", "/api/v2/plans/", "/api/v2/runs/")),
    ("runner_api", "router", ("/api/runner/",)),
    ("assessments", "router", ("/api/v2/assessment-results/", WORKSPACES)),
    ("query_runs", "router", ("/api/v2/queries", WORKSPACES)),
    ("plan_exports", "router", ("/api/v2/plan-exports",)),
    ("terraform_actions", "router", ("/api/v2/terraform-actions/", WORKSPACES)),
    ("module_tests", "router", (ORGS,)),
    ("registry_modules", "router", (ORGS, "/api/v2/registry-modules/")),
    ("no_code_modules", "router", (ORGS, "/api/v2/no-code-modules/")),
    ("module_registry", "router", ("/api/registry/v1/modules/",)),
    ("registry_providers", "router", (ORGS,)),
    ("provider_registry", "router", ("/api/registry/v1/providers/",)),
    ("gpg_keys", "router", ("/api/registry/",)),
    (
        "policies",
        "router",
        (ORGS, "/api/v2/policies/", "/api/v2/policy-set-versions/", "/api/v2/policy-sets/"),
    ),
    (
        "policy_evaluations",
        "router",
        (
            "/api/v2/policy-checks/",
            "/api/v2/policy-evaluations/",
            "/api/v2/policy-set-outcomes/",
            "/api/v2/runs/",
            "/api/v2/task-stages/",
            "/api/v2/tf-policy-evaluations/",
        ),
    ),
)


def api_router(module: str, name: str) -> APIRouter:
    router: APIRouter = getattr(importlib.import_module(f"terrace.web.routers.{module}"), name)
    return router


def include_api(app: FastAPI | APIRouter) -> None:
    """Every router of API_ROUTERS, in order."""
    for module, name, _ in API_ROUTERS:
        app.include_router(api_router(module, name))


def api_groups() -> list[tuple[Callable[[str], bool], Callable[[FastAPI], None]]]:
    """One lazy group (`web/lazy_routes.py`) per router of API_ROUTERS, in order."""

    def group(module: str, name: str, prefixes: tuple[str, ...]) -> tuple[Callable[..., bool], Callable[..., None]]:
        return (lambda path: path.startswith(prefixes)), (lambda app: app.include_router(api_router(module, name)))

    return [group(*entry) for entry in API_ROUTERS]
