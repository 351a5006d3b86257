"""Every recorded route names its action as `<resource>.<verb>` with a resource the trail knows: the web UI's
form posts as their API twins (`POST .../settings/delete` is `workspace.delete`), team memberships, registry
publishing, SCIM (`domain/audit_actions.py`); a form that says its verb names it (`note_action`). SCIM's requests
name the SCIM token that made them."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent.parent))

from app_routes import routes  # noqa: E402
from fastapi.testclient import TestClient  # noqa: E402
from run_helpers import make_run_env  # noqa: E402
from terrace.bootstrap import build_memory  # noqa: E402
from terrace.domain.audit import action_of  # noqa: E402
from terrace.web.app import create_app  # noqa: E402
from terrace.web.audit_trail import MUTATING, NOT_RECORDED, STATE_READS  # noqa: E402
from ui_helpers import sign_in, sign_in_token  # noqa: E402

# what an event can be about: a new route naming another resource adds it here (and to the trail's docs)
RESOURCES = {
    "account", "agent", "agent-pool", "assessment", "authentication-token", "bulk-action", "change-request",
    "comment", "configuration-version", "cost-estimation-setting", "customization-setting", "data-retention-policy",
    "general-setting", "gpg-key", "hyok-configuration", "hyok-customer-key-version", "job", "module-consumer",
    "no-code-module", "notification-configuration", "oauth-client", "oauth-token", "oidc-configuration",
    "oidc-setting", "organization", "organization-membership", "plan-export", "policy", "policy-check", "policy-set",
    "policy-set-parameter", "policy-set-version", "project", "query", "registry-module", "registry-module-version",
    "registry-provider", "registry-provider-platform", "registry-provider-version", "remote-state-consumer",
    "reserved-tag", "reserved-tag-key", "run", "run-trigger", "runner", "saml-setting", "scim", "scim-group",
    "scim-group-mapping", "scim-setting", "scim-token", "scim-user", "session", "smtp-setting", "ssh-key", "state",
    "state-version", "state-version-output", "subscription", "tag", "tag-binding", "task", "task-result",
    "task-stage", "team",
    "team-membership", "team-project", "team-workspace", "terraform-login", "test-run", "token-ttl-policy",
    "terraform-version", "opentofu-version", "opa-version", "sentinel-version",  # the admin API's tool versions
    "twilio-setting", "user", "variable", "varset", "webhook", "workspace",
}  # fmt: skip
PARAMS = {"action": "apply", "answer": "accept", "how": "apply", "kind": "terraform-versions", "relation": "projects"}


def test_every_recorded_route_names_a_known_resource() -> None:
    app = create_app(build_memory())
    unknown = {}
    for route in routes(app.routes):
        for method in getattr(route, "methods", None) or set():
            recorded = method in MUTATING or (method == "GET" and route.path in STATE_READS)
            if not recorded or route.path in NOT_RECORDED:
                continue
            resource, action = action_of(method, route.path, PARAMS)
            if resource not in RESOURCES or not action.startswith(f"{resource}.") or action.endswith("."):
                unknown[f"{method} {route.path}"] = action
    assert unknown == {}


def test_the_ui_forms_and_team_memberships_are_recorded_as_their_api_twins() -> None:
    env = make_run_env()
    browser = TestClient(create_app(env.container), base_url="https://testserver", follow_redirects=False)
    token = env.headers["Authorization"].split()[1]
    assert sign_in(browser, token).status_code == 303
    page = "/app/acme/workspaces/app"
    csrf = sign_in_token(browser.get(page).text)
    for action in ("lock", "unlock"):
        assert browser.post(f"{page}/lock", data={"csrf_token": csrf, "action": action}).status_code == 303
    team = env.api("POST", "/organizations/acme/teams", {"data": {"type": "teams", "attributes": {"name": "devs"}}})
    users = {"data": [{"type": "users", "id": "alice"}]}
    assert env.api("POST", f"/teams/{team.json()['data']['id']}/relationships/users", users).status_code == 204
    # routes that name their organization only by an id are filed where the Authorizer decided them
    team_ref = {"team": {"data": {"type": "teams", "id": team.json()["data"]["id"]}}}
    grant = {"data": {"type": "team-workspaces", "attributes": {"access": "read"}, "relationships": {
        **team_ref, "workspace": {"data": {"type": "workspaces", "id": env.workspace_id}}}}}  # fmt: skip
    assert env.api("POST", "/team-workspaces", grant).status_code == 201
    assert env.api("DELETE", f"/teams/{team.json()['data']['id']}").status_code == 204
    deleted = browser.post(f"{page}/settings/delete", data={"csrf_token": csrf, "confirm_name": "app"})
    assert deleted.status_code == 303, deleted.text
    trail = env.client.get("/api/v2/organizations/acme/audit-trail?page[size]=100", headers=env.headers)
    events = trail.json()["data"]
    actions = [(e["resource"]["action"], e["auth"]["description"]) for e in events][-7:]
    assert actions == [("workspace.lock", "alice"), ("workspace.unlock", "alice"), ("team.create", "alice"),
                       ("team-membership.create", "alice"), ("team-workspace.create", "alice"),
                       ("team.delete", "alice"), ("workspace.delete", "alice")]  # fmt: skip
    assert all(e["request"]["source"] and e["resource"]["outcome"] < 400 for e in events[-7:])
    # a form naming the workspace by its name is about its id, as the API's events are
    assert [e["resource"]["id"] for e in events[-7:] if e["resource"]["type"] == "workspace"] == [env.workspace_id] * 3


def test_scim_provisioning_names_its_token() -> None:
    env = make_run_env()
    root = env.container.accounts.create_user("root", "root@example.com", site_admin=True)
    admin = {"Authorization": f"Bearer {env.container.accounts.issue_token(_user_kind(), root.id).secret}"}
    saml = {"enabled": True, "sso-endpoint-url": "https://idp.example/sso", "idp-cert": "c", "provider-type": "okta"}
    for section, attributes in (("saml", saml), ("scim", {"enabled": True})):
        body = {"data": {"type": f"{section}-settings", "attributes": attributes}}
        assert env.client.patch(f"/api/v2/admin/{section}-settings", json=body, headers=admin).status_code == 200
    body = {"data": {"type": "authentication-tokens", "attributes": {"description": "idp"}}}
    made = env.client.post("/api/v2/admin/scim-tokens", json=body, headers=admin).json()["data"]
    scim = {"Authorization": f"Bearer {made['attributes']['token']}", "Content-Type": "application/scim+json"}
    user: dict[str, Any] = {"schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"], "userName": "bob@example.com",
                            "active": True, "emails": [{"primary": True, "value": "bob@example.com"}]}  # fmt: skip
    assert env.client.post("/scim/v2/Users", json=user, headers=scim).status_code == 201
    site = env.client.get("/api/v2/admin/audit-trail", headers=admin).json()["data"]
    event = next(e for e in site if e["resource"]["action"] == "scim-user.create")
    assert event["auth"]["kind"] == "scim" and event["auth"]["token_id"] == made["id"], event["auth"]


def _user_kind() -> Any:
    from terrace.domain.principal import PrincipalKind

    return PrincipalKind.USER


def test_an_event_is_written_before_its_answer_ends() -> None:
    """A client that reads the trail right after an answer finds the answer's event (go-tfe's TestAuditTrailsList
    creates a workspace, then lists the trail since a moment before): the middleware writes before the answer's
    last part goes out, not after."""
    import asyncio
    from types import SimpleNamespace

    from terrace.web.audit_trail import AuditRequests

    written: list[Any] = []
    seen_at_end: list[int] = []

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        scope["route"] = SimpleNamespace(path="/api/v2/workspaces/{workspace_id}")
        scope["path_params"] = {"workspace_id": "ws-1"}
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}", "more_body": False})

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.body" and not message.get("more_body", False):
            seen_at_end.append(len(written))

    recorder = SimpleNamespace(record_request=written.append)
    middleware = AuditRequests(app, lambda: recorder)  # type: ignore[arg-type]
    scope = {"type": "http", "method": "PATCH", "headers": [], "client": ("10.0.0.9", 1)}
    asyncio.run(middleware(scope, None, send))  # type: ignore[arg-type]
    assert seen_at_end == [1] and written[0].template == "/api/v2/workspaces/{workspace_id}"
