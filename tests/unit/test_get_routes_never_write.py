"""No GET writes (issue 21), for every GET route of the app: over a memory container seeded with one of everything
(an applied run with its plan, apply, logs, comment and events, state versions and outputs, variables, tags, teams
and their tokens, memberships, projects, SSH keys, retention policies, run triggers, tool versions), each GET route
(`app_routes.routes`: API, http backend, log URLs, UI pages, the admin API) is called with its path filled from the
seed, as an owner, a signed-in browser or a site admin, and the table port's writes are watched
(`tests/table_writes.py`). A route whose path names a parameter this test cannot fill fails: a new GET route is
covered the day it is added.

The one writer a GET may reach is not exercised here: `WebSessionService.resolve` deletes a session nobody vouches
for any more (its token revoked or expired, its user suspended or gone) when its cookie comes back. That write is
cleanup, not an answer's need (the session is refused either way; suspension and deletion already end sessions,
and the table's TTL removes expired ones); `test_a_dead_sessions_cookie_is_the_one_read_that_deletes` pins it.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

import pytest
from app_routes import routes
from fastapi.testclient import TestClient
from run_helpers import RunEnv, make_run_env
from state_helpers import null_resource, state_bytes, sv_body
from table_writes import spy_writes
from terrace.domain.principal import PrincipalKind
from terrace.web.app import create_app
from ui_helpers import sign_in

OK = {200, 204, 302, 303, 307}
# GET routes that answer something else with this seed, and why (they are still called: they must not write)
NOT_OK = {
    "/app/sign-in/oidc": "no OpenID Connect issuer is configured: 404",
    "/app/sign-in/oidc/callback": "no OpenID Connect issuer is configured: 404",
    "/api/v2/state-versions/{sv_id}/json-download": "the seed's states come without terraform's JSON state: 404",
    "/api/v2/plans/{plan_id}/json-output": "the scripted runner uploads no plan JSON: 404",
    "/api/v2/plans/{plan_id}/json-output-redacted": "the scripted runner uploads no plan JSON: 404",
}
QUERIES = {
    "/api/v2/team-workspaces": "filter[workspace][id]={workspace_id}",
    "/api/v2/team-projects": "filter[project][id]={project_id}",
    "/api/v2/state-versions": "filter[workspace][name]=app&filter[organization][name]=acme",
    "/api/v2/workspaces/{workspace_id}/run-triggers": "filter[run-trigger][type]=inbound",
    "/app/{organization}/workspaces/{name}/states/diff": "before={old_sv_id}&after={sv_id}",
    "/app/oauth/authorize": "client_id=terraform-cli&response_type=code&redirect_uri=http%3A%2F%2Flocalhost%3A10000"
    "%2Flogin&code_challenge=E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGcSqSGwxM&code_challenge_method=S256&state=s",
    "/app/{organization}/workspaces/{name}/runs/{run_id}/logs/{phase}": "offset=0",
    "/app/{organization}/search": "q=null_resource",
}


def _ok(response: Any, status: int = 200) -> dict[str, Any]:
    assert response.status_code == status, response.text
    return dict(response.json()["data"]) if response.content else {}


def _seed(env: RunEnv) -> dict[str, str]:
    """One of everything on workspace `app` of `acme`; returns the values of the routes' path parameters."""
    api = env.api
    ws = env.workspace_id
    source = _ok(api("POST", "/organizations/acme/workspaces", {"data": {"type": "workspaces",
                 "attributes": {"name": "source"}}}), 201)["id"]  # fmt: skip
    trigger = _ok(api("POST", f"/workspaces/{ws}/run-triggers", {"data": {"type": "run-triggers", "relationships":
                  {"sourceable": {"data": {"type": "workspaces", "id": source}}}}}), 201)["id"]  # fmt: skip
    for serial in (1, 2):
        raw = state_bytes(serial, outputs={"o": {"value": "v", "type": "string"}}, resources=[null_resource("r", "1")])
        assert api("POST", f"/workspaces/{ws}/actions/lock", {}).status_code == 200
        _ok(api("POST", f"/workspaces/{ws}/state-versions", sv_body(raw, serial)), 201)
        assert api("POST", f"/workspaces/{ws}/actions/unlock").status_code == 200
    sv, old_sv = [item["id"] for item in api("GET", f"/workspaces/{ws}/state-versions").json()["data"]][:2]
    wos = api("GET", f"/state-versions/{sv}/outputs").json()["data"][0]["id"]
    var = _ok(api("POST", f"/workspaces/{ws}/vars", {"data": {"type": "vars", "attributes": {"key": "k",
              "value": "v", "category": "env"}}}), 201)["id"]  # fmt: skip
    cv = env.upload_config()
    run = env.create_run(cv)["id"]
    env.work_next()
    assert api("POST", f"/runs/{run}/actions/apply", {}).status_code == 202
    env.work_next()
    comment = _ok(api("POST", f"/runs/{run}/comments", {"data": {"type": "comments", "attributes":
                  {"body": "ok"}}}), 201)["id"]  # fmt: skip
    run_doc = _ok(api("GET", f"/runs/{run}"))
    event = api("GET", f"/runs/{run}/run-events").json()["data"][0]["id"]
    plan = _ok(api("GET", f"/runs/{run}/plan"))
    team = _ok(api("POST", "/organizations/acme/teams", {"data": {"type": "teams", "attributes":
               {"name": "devs"}}}), 201)["id"]  # fmt: skip
    _ok(api("POST", f"/teams/{team}/authentication-token", None), 201)
    _ok(api("POST", "/organizations/acme/authentication-token", None), 201)
    project = api("GET", "/organizations/acme/projects").json()["data"][0]["id"]
    grant = _ok(api("POST", "/team-workspaces", {"data": {"type": "team-workspaces", "attributes": {"access":
                "read"}, "relationships": {"team": {"data": {"type": "teams", "id": team}}, "workspace": {"data":
                {"type": "workspaces", "id": ws}}}}}), 201)["id"]  # fmt: skip
    project_grant = _ok(api("POST", "/team-projects", {"data": {"type": "team-projects", "attributes": {"access":
                        "read"}, "relationships": {"team": {"data": {"type": "teams", "id": team}}, "project":
                        {"data": {"type": "projects", "id": project}}}}}), 201)["id"]  # fmt: skip
    key = _ok(api("POST", "/organizations/acme/ssh-keys", {"data": {"type": "ssh-keys", "attributes": {"name": "k",
              "value": "-----BEGIN OPENSSH PRIVATE KEY-----\nx\n-----END OPENSSH PRIVATE KEY-----\n"}}}),
              201)["id"]  # fmt: skip
    for path in ("/organizations/acme", f"/workspaces/{ws}"):
        policy = {"data": {"type": "data-retention-policies", "attributes": {"delete-older-than-n-days": 30}}}
        _ok(api("PATCH", f"{path}/relationships/data-retention-policy", policy))
    membership = api("GET", "/organizations/acme/organization-memberships").json()["data"][0]["id"]
    user = _ok(api("GET", "/account/details"))["id"]
    token = api("GET", f"/users/{user}/authentication-tokens").json()["data"][0]["id"]
    return {
        "org": "acme", "organization": "acme", "workspace_id": ws, "trigger_id": trigger, "sv_id": sv,
        "old_sv_id": old_sv, "wos_id": wos, "var_id": var, "cv_id": cv, "run_id": run, "comment_id": comment,
        "event_id": event, "plan_id": plan["id"], "apply_id": run_doc["relationships"]["apply"]["data"]["id"],
        "cost_estimate_id": run_doc["relationships"]["cost-estimate"]["data"]["id"]
        if run_doc["relationships"].get("cost-estimate", {}).get("data") else "ce-none",
        "team_id": team, "project_id": project, "grant_id": grant, "project_grant_id": project_grant,
        "key_id": key, "membership_id": membership, "user_id": user, "token_id": token, "phase": "plan",
        "log_url": urlsplit(plan["attributes"]["log-read-url"]).path, "name": "app", "kind": "terraform-versions",
    }  # fmt: skip


def _path(template: str, values: dict[str, str]) -> str:
    if template.startswith("/api/v2/logs/"):
        return values["log_url"]
    if template == "/static/{name}":
        return "/static/terrace.css"
    filled = dict(values)
    if re.match(r"^/api/v2/(admin/)?organizations/\{name\}", template):
        filled["name"] = "acme"
    if template.startswith("/api/v2/team-projects/"):
        filled["grant_id"] = values["project_grant_id"]
    missing = set(re.findall(r"{([^}]+)}", template)) - set(filled)
    assert not missing, f"{template}: no seeded value for {sorted(missing)}: add one to _seed"
    path = template.format(**filled)
    query = QUERIES.get(template)
    return f"{path}?{query.format(**filled)}" if query else path


def test_no_get_route_writes(monkeypatch: pytest.MonkeyPatch) -> None:
    env = make_run_env()
    values = _seed(env)
    container = env.container
    root = container.accounts.create_user("root", "root@example.com", site_admin=True)
    admin_headers = {"Authorization": f"Bearer {container.accounts.issue_token(PrincipalKind.USER, root.id).secret}"}
    versions = env.client.get("/api/v2/admin/terraform-versions", headers=admin_headers).json()["data"]
    if not versions:
        body = {"data": {"type": "terraform-versions", "attributes": {"version": "1.0.3", "url":
                "https://releases.example.com/terraform_1.0.3.zip", "sha": "a" * 64}}}  # fmt: skip
        versions = [_ok(env.client.post("/api/v2/admin/terraform-versions", headers=admin_headers, json=body), 201)]
    values["record_id"] = versions[0]["id"]
    browser = TestClient(create_app(container), base_url="https://testserver", follow_redirects=False)
    assert sign_in(browser, env.headers["Authorization"].split()[1]).status_code == 303

    writes = spy_writes(container.table, monkeypatch)
    called, wrote, failed = [], {}, {}
    for route in routes(env.client.app.routes):  # type: ignore[attr-defined]
        if "GET" not in (getattr(route, "methods", None) or ()):
            continue
        path = _path(route.path, values)
        if route.path.startswith("/app"):
            response = browser.get(path)
        elif route.path.startswith("/api/v2/admin"):
            response = env.client.get(path, headers=admin_headers, follow_redirects=False)
        elif route.path.startswith("/state/v1"):
            response = env.client.get(
                path, auth=("user", env.headers["Authorization"].split()[1]), follow_redirects=False
            )
        else:
            response = env.client.get(path, headers=env.headers, follow_redirects=False)
        called.append(route.path)
        if writes:
            wrote[route.path] = list(writes)
            writes.clear()
        if response.status_code not in OK and route.path not in NOT_OK:
            failed[route.path] = f"{response.status_code} {response.text[:200]}"
    assert len(called) > 100
    assert not wrote, f"GET routes that wrote: {wrote}"
    assert not failed, f"GET routes that did not answer (give them a seed or a reason in NOT_OK): {failed}"


def test_a_dead_sessions_cookie_is_the_one_read_that_deletes(monkeypatch: pytest.MonkeyPatch) -> None:
    env = make_run_env()
    container = env.container
    bob = container.accounts.create_user("bob", "bob@example.com")
    issued = container.accounts.issue_token(PrincipalKind.USER, bob.id)
    browser = TestClient(create_app(container), base_url="https://testserver", follow_redirects=False)
    assert sign_in(browser, issued.secret).status_code == 303
    writes = spy_writes(container.table, monkeypatch)
    assert browser.get("/app").status_code == 200
    assert writes == []
    monkeypatch.undo()
    container.accounts.revoke_token(issued.token.id)
    writes = spy_writes(container.table, monkeypatch)
    assert browser.get("/app").status_code in (302, 303)  # signed out: back to the sign-in page
    assert writes[:1] == ["delete"] and set(writes) <= {"delete", "transact"}  # the dead session's row (memory's
    # delete is a one-operation transaction)
