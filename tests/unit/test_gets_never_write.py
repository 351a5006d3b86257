"""Reads never write: every GET route of the app (API, http backend, runner API, UI, admin API), over an
organization that holds one of everything, writes nothing to the table, puts no blob and publishes no event.

The route list is the app's own (`app_routes.routes`): a new GET route is walked without being named here. Its path
parameters come from the seeded objects (`_value`); a parameter nobody seeded gets a placeholder and the route is
still walked (a 404 must not write either). A site admin walks, so the admin API answers too. Only the routes in
`WRITES_BY_PROTOCOL` may write, each with why."""

from __future__ import annotations

import base64
import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent.parent))

from app_routes import routes  # noqa: E402
from run_helpers import RunEnv, make_run_env, tarball  # noqa: E402
from table_writes import spy_writes  # noqa: E402
from terrace.domain.principal import PrincipalKind  # noqa: E402
from terrace.web.ui.session import COOKIE  # noqa: E402

# GET routes that write by their protocol's design, not as a side effect of a read.
WRITES_BY_PROTOCOL = {
    "/app/sign-in/oidc": "starts an OpenID Connect sign-in: records the state it must find again at the callback",
    "/app/sign-in/oidc/callback": "the identity provider's redirect ends a sign-in: it creates the web session",
}
PLACEHOLDER = "does-not-exist"
MIN_ANSWERED = 110  # GET routes that must answer 200 (or a redirect) over the seeded data: the walk reached them

STATE = {
    "version": 4,
    "terraform_version": "1.0.3",
    "serial": 1,
    "lineage": "4f1f6e2a-0000-4000-8000-000000000001",
    "outputs": {"name": {"value": "app", "type": "string"}},
    "resources": [
        {
            "mode": "managed",
            "type": "null_resource",
            "name": "one",
            "provider": 'provider["registry.terraform.io/hashicorp/null"]',
            "instances": [{"schema_version": 0, "attributes": {"id": "1"}}],
        }
    ],
}


def _basic(headers: dict[str, str]) -> str:
    """The http backend's basic auth for the bearer token in `headers`."""
    return "Basic " + base64.b64encode(f"x:{headers['Authorization'].split()[1]}".encode()).decode()


def _ok(response: Any, *codes: int) -> dict[str, Any]:
    assert response.status_code in (codes or (200, 201)), f"{response.status_code} {response.text[:300]}"
    return dict(response.json()) if response.content else {}


def _seed(env: RunEnv) -> dict[str, str]:
    """One of everything in organization acme; the ids by path parameter name."""
    c, api, org = env.container, env.api, env.organization
    ids: dict[str, str] = {"org": org, "organization": org, "ws_name": "app", "workspace_id": env.workspace_id}
    user = c.accounts.find_user("alice")
    assert user is not None
    c.users.set_flags(user.id, site_admin=True)
    ids["user_id"] = user.id
    basic = base64.b64encode(f"x:{env.headers['Authorization'].split()[1]}".encode()).decode()
    state = env.client.post(
        f"/state/v1/{org}/app", content=json.dumps(STATE), headers={"Authorization": f"Basic {basic}"}
    )
    assert state.status_code == 200, state.text
    current = _ok(api("GET", f"/workspaces/{env.workspace_id}/current-state-version?include=outputs"))
    ids["sv_id"] = current["data"]["id"]
    ids["wos_id"] = current["data"]["relationships"]["outputs"]["data"][0]["id"]
    cv_id = env.upload_config()
    ids["cv_id"] = cv_id
    run = env.create_run(cv_id, message="seeded")
    env.work_next()  # the plan ends with changes: the run awaits confirmation
    ids["run_id"] = run["id"]
    ids["plan_id"] = "plan-" + run["id"].split("-", 1)[1]
    ids["apply_id"] = "apply-" + run["id"].split("-", 1)[1]
    plan = _ok(api("GET", f"/plans/{ids['plan_id']}"))
    log_url = plan["data"]["attributes"]["log-read-url"]
    ids["phase_id"], ids["expires"], ids["signature"] = log_url.rstrip("/").split("/")[-3:]
    comment = _ok(
        api("POST", f"/runs/{run['id']}/comments", {"data": {"type": "comments", "attributes": {"body": "looks good"}}})
    )
    ids["comment_id"] = comment["data"]["id"]
    events = _ok(api("GET", f"/runs/{run['id']}/run-events"))
    ids["event_id"] = events["data"][0]["id"]
    var = {"data": {"type": "vars", "attributes": {"key": "region", "value": "eu", "category": "terraform"}}}
    ids["var_id"] = _ok(api("POST", f"/workspaces/{env.workspace_id}/vars", var))["data"]["id"]
    tag = {"data": [{"type": "tags", "attributes": {"name": "prod"}}]}
    _ok(api("POST", f"/workspaces/{env.workspace_id}/relationships/tags", tag), 204)
    team = {"data": {"type": "teams", "attributes": {"name": "devs", "organization-access": {"read-workspaces": True}}}}
    ids["team_id"] = _ok(api("POST", f"/organizations/{org}/teams", team))["data"]["id"]
    _ok(api("POST", f"/teams/{ids['team_id']}/authentication-token", {"data": {"type": "authentication-tokens"}}))
    described = {"data": {"type": "authentication-tokens", "attributes": {"description": "ci"}}}
    _ok(api("POST", f"/teams/{ids['team_id']}/authentication-tokens", described))
    _ok(api("POST", f"/organizations/{org}/authentication-token", {"data": {"type": "authentication-tokens"}}))
    token = {"data": {"type": "authentication-tokens", "attributes": {"description": "ci"}}}
    ids["token_id"] = _ok(api("POST", f"/users/{user.id}/authentication-tokens", token))["data"]["id"]
    bindings = {"tag-bindings": {"data": [{"type": "tag-bindings", "attributes": {"key": "env", "value": "prod"}}]}}
    project = {"data": {"type": "projects", "attributes": {"name": "platform"}, "relationships": bindings}}
    ids["project_id"] = _ok(api("POST", f"/organizations/{org}/projects", project))["data"]["id"]
    reserved = {"data": {"type": "reserved-tag-keys", "attributes": {"key": "env", "disable-overrides": True}}}
    _ok(api("POST", f"/organizations/{org}/reserved-tag-keys", reserved))
    team_ref = {"team": {"data": {"type": "teams", "id": ids["team_id"]}}}
    grant = {"data": {"type": "team-workspaces", "attributes": {"access": "read"}, "relationships": {
        **team_ref, "workspace": {"data": {"type": "workspaces", "id": env.workspace_id}}}}}  # fmt: skip
    ids["team_workspace_id"] = _ok(api("POST", "/team-workspaces", grant))["data"]["id"]
    grant = {"data": {"type": "team-projects", "attributes": {"access": "read"}, "relationships": {
        **team_ref, "project": {"data": {"type": "projects", "id": ids["project_id"]}}}}}  # fmt: skip
    ids["team_project_id"] = _ok(api("POST", "/team-projects", grant))["data"]["id"]
    members = _ok(api("GET", f"/organizations/{org}/organization-memberships"))
    ids["membership_id"] = members["data"][0]["id"]
    key = {"data": {"type": "ssh-keys", "attributes": {"name": "deploy", "value": "-----BEGIN KEY-----\nx\n"}}}
    ids["key_id"] = _ok(api("POST", f"/organizations/{org}/ssh-keys", key))["data"]["id"]
    oauth = {"data": {"type": "oauth-clients", "attributes": {"service-provider": "github", "oauth-token-string": "t",
             "http-url": "https://github.com", "api-url": "https://api.github.com"}}}  # fmt: skip
    client = _ok(api("POST", f"/organizations/{org}/oauth-clients", oauth))["data"]
    ids["client_id"] = client["id"]
    ids["oauth_token_id"] = client["relationships"]["oauth-tokens"]["data"][0]["id"]
    pool = {"data": {"type": "agent-pools", "attributes": {"name": "vpc"}}}
    ids["pool_id"] = _ok(api("POST", f"/organizations/{org}/agent-pools", pool))["data"]["id"]
    secret = _ok(api("POST", f"/agent-pools/{ids['pool_id']}/authentication-tokens", token))["data"]["attributes"]
    agent = env.client.post("/api/agent/register", headers={"Authorization": f"Bearer {secret['token']}"}, json={})
    ids["agent_id"] = agent.json()["agent_id"]
    env.container.key_wrapper.add("team-key")  # type: ignore[attr-defined]  # Hold Your Own Key: a tested key
    role = {"data": {"type": "aws-oidc-configurations", "attributes": {"role-arn": "arn:aws:iam::1:role/r"}}}
    ids["oidc_id"] = _ok(api("POST", f"/organizations/{org}/oidc-configurations", role))["data"]["id"]
    hyok = {"data": {"type": "hyok-configurations", "attributes": {"name": "k", "kek-id": "team-key",
            "kms-options": {"key-region": "us-east-1"}}, "relationships": {
            "oidc-configuration": {"data": {"type": "aws-oidc-configurations", "id": ids["oidc_id"]}},
            "agent-pool": {"data": {"type": "agent-pools", "id": ids["pool_id"]}}}}}  # fmt: skip
    ids["hyok_id"] = _ok(api("POST", f"/organizations/{org}/hyok-configurations", hyok))["data"]["id"]
    _ok(api("POST", f"/hyok-configurations/{ids['hyok_id']}/actions/test"))
    versions = _ok(api("GET", f"/hyok-configurations/{ids['hyok_id']}/hyok-customer-key-versions"))["data"]
    ids["key_version_id"] = versions[0]["id"]
    version = _ok(api("GET", f"/hyok-customer-key-versions/{ids['key_version_id']}"))["data"]
    ids["data_key_id"] = version["relationships"]["hyok-encrypted-data-keys"]["data"][0]["id"]
    estimate = _ok(api("GET", f"/runs/{run['id']}?include=cost_estimate"))
    cost = (estimate["data"]["relationships"].get("cost-estimate") or {}).get("data") or {}
    ids["cost_estimate_id"] = cost.get("id") or PLACEHOLDER
    varset = {"data": {"type": "varsets", "attributes": {"name": "shared", "global": False}}}
    ids["varset_id"] = _ok(api("POST", f"/organizations/{org}/varsets", varset))["data"]["id"]
    var = {"data": {"type": "vars", "attributes": {"key": "team", "value": "ops", "category": "terraform"}}}
    ids["varset_var_id"] = _ok(api("POST", f"/varsets/{ids['varset_id']}/relationships/vars", var))["data"]["id"]
    hook_attributes = {
        "name": "deploys",
        "destination-type": "generic",
        "enabled": False,
        "url": "https://hooks.x.io/t",
    }
    hook = {"data": {"type": "notification-configurations", "attributes": hook_attributes}}
    ids["configuration_id"] = ids["nc_id"] = _ok(
        api("POST", f"/workspaces/{env.workspace_id}/notification-configurations", hook)
    )["data"]["id"]
    source = {"data": {"type": "workspaces", "attributes": {"name": "network", "execution-mode": "remote"}}}
    source_id = _ok(api("POST", f"/organizations/{org}/workspaces", source))["data"]["id"]
    trigger = {"data": {"relationships": {"sourceable": {"data": {"type": "workspaces", "id": source_id}}}}}
    ids["trigger_id"] = _ok(api("POST", f"/workspaces/{env.workspace_id}/run-triggers", trigger))["data"]["id"]
    task = {"data": {"type": "tasks", "attributes": {
        "name": "checks", "url": "https://checks.example.com/hook", "category": "task"}}}  # fmt: skip
    ids["task_id"] = _ok(api("POST", f"/organizations/{org}/tasks", task))["data"]["id"]
    attach = {"data": {"type": "workspace-tasks", "attributes": {"enforcement-level": "advisory", "stages": [
        "post_plan"]}, "relationships": {"task": {"data": {"type": "tasks", "id": ids["task_id"]}}}}}  # fmt: skip
    ids["attachment_id"] = _ok(api("POST", f"/workspaces/{env.workspace_id}/tasks", attach))["data"]["id"]
    ids["kind"] = "terraform-versions"
    versions = _ok(env.client.get("/api/v2/admin/terraform-versions", headers=env.headers))
    ids["record_id"] = versions["data"][0]["id"] if versions["data"] else PLACEHOLDER
    ids["phase"] = "plan"
    on = {"workspace": {"data": {"type": "workspaces", "id": env.workspace_id}}}
    query = {"data": {"type": "queries", "attributes": {"source": "tfe-api"}, "relationships": on}}
    ids["query_run_id"] = _ok(api("POST", "/queries", query))["data"]["id"]
    ids.update(registry="private", namespace=org, provider="aws")  # module `app`: `name` is "app" after the org
    module = {"data": {"type": "registry-modules", "attributes": {"name": "app", "provider": "aws"}}}
    _ok(api("POST", f"/organizations/{org}/registry-modules", module))
    tests = f"/organizations/{org}/tests/registry-modules/private/{org}/app/aws"
    upload = _ok(api("POST", f"{tests}/test-runs/configuration-versions"))["data"]
    env.land(upload["attributes"]["upload-url"].split("memory://blobs/")[1].split("?")[0], tarball({"main.tf": ""}))
    tested = {"configuration-version": {"data": {"type": "configuration-versions", "id": upload["id"]}}}
    ids["test_run_id"] = _ok(api("POST", f"{tests}/test-runs", {"data": {"type": "test-runs",
                             "relationships": tested}}))["data"]["id"]  # fmt: skip
    ids["test_var_id"] = _ok(api("POST", f"{tests}/vars", var))["data"]["id"]
    return ids


def _value(path: str, param: str, ids: dict[str, str]) -> str:
    if param == "name":  # a workspace's name after an organization in the path, else an organization's
        before = path[: path.index("{name}")]
        return ids["ws_name"] if re.search(r"\{(org|organization)\}", before) else ids["org"]
    if param == "var_id" and "/varsets/" in path:
        return ids["varset_var_id"]
    if param == "var_id" and "/tests/" in path:
        return ids["test_var_id"]
    if param == "grant_id":
        return ids["team_project_id"] if "team-projects" in path else ids["team_workspace_id"]
    return ids.get(param, PLACEHOLDER)


def _url(path: str, ids: dict[str, str]) -> str:
    return re.sub(r"\{(\w+)(?::\w+)?\}", lambda m: _value(path, m.group(1), ids), path)


def _spy(target: Any, name: str, monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, ...]]:
    """The positional arguments of every later call of `target.name`."""
    calls: list[tuple[Any, ...]] = []
    original = getattr(target, name)

    def spy(*args: Any, **kwargs: Any) -> Any:
        calls.append(args)
        return original(*args, **kwargs)

    monkeypatch.setattr(target, name, spy)
    return calls


def _gets(app: Any) -> list[str]:
    found = []
    for route in routes(app.routes):
        if "GET" in (getattr(route, "methods", None) or set()) and not route.path.startswith("/static"):
            found.append(route.path)
    return sorted(set(found))


@pytest.fixture(scope="module")
def seeded() -> tuple[RunEnv, dict[str, str]]:
    env = make_run_env()
    return env, _seed(env)


def test_no_get_route_writes(seeded: tuple[RunEnv, dict[str, str]], monkeypatch: pytest.MonkeyPatch) -> None:
    env, ids = seeded
    c = env.container
    cookie, _ = c.web_sessions.sign_in(env.headers["Authorization"].split()[1])
    env.client.cookies.set(COOKIE, cookie)
    writes = spy_writes(c.table, monkeypatch)
    puts = _spy(c.blobs, "put", monkeypatch)
    published = _spy(c.publisher, "publish", monkeypatch)
    offenders: dict[str, list[str]] = {}
    statuses: dict[str, int] = {}
    answered = 0
    for path in _gets(env.client.app):
        url = _url(path, ids)
        writes.clear(), puts.clear(), published.clear()
        headers = dict(env.headers)
        if path.startswith("/state/v1"):
            headers["Authorization"] = _basic(headers)
        response = env.client.get(url, headers=headers, follow_redirects=False)
        assert response.status_code < 500, f"GET {url}: {response.status_code} {response.text[:300]}"
        answered += response.status_code < 400
        statuses[path] = response.status_code
        done = writes + [f"blob {args[0]}" for args in puts] + [f"event {args[0].get('type')}" for args in published]
        if done and path not in WRITES_BY_PROTOCOL:
            offenders[url] = done
    assert offenders == {}
    assert answered >= MIN_ANSWERED, (
        f"only {answered} GET routes answered (the seeding no longer reaches them): {statuses}"
    )


def test_a_dead_web_session_is_refused_without_a_write(
    seeded: tuple[RunEnv, dict[str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A session whose token was revoked ends (the user is sent to sign in); its item is left to expire."""
    env, ids = seeded
    c = env.container
    user = c.accounts.find_user("alice")
    assert user is not None
    issued = c.accounts.issue_token(PrincipalKind.USER, user.id)
    cookie, _ = c.web_sessions.sign_in(issued.secret)
    c.accounts.revoke_token(issued.token.id)
    writes = spy_writes(c.table, monkeypatch)
    response = env.client.get(f"/app/{ids['org']}/workspaces", cookies={COOKIE: cookie}, follow_redirects=False)
    assert response.status_code in (302, 303, 307) and "sign-in" in response.headers["location"]
    assert writes == []


def test_on_aws_a_workspace_read_that_opens_a_warm_window_writes_nothing_either(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The AWS wiring of the warm window (`scaler_kick` set): each API instance's read of a workspace signals the
    scaler, off the request's thread; neither the read nor that thread writes (the scaler takes the deployment's wake
    claim: `warm_window.py: take_wakes`)."""
    from terrace.services.runs import warm_window

    env = make_run_env(warm_window_minutes=15)
    kicks: list[dict[str, Any]] = []
    env.container.scaler_kick = lambda **kwargs: kicks.append(kwargs)
    cookie, _ = env.container.web_sessions.sign_in(env.headers["Authorization"].split()[1])
    writes = spy_writes(env.container.table, monkeypatch)
    for path in ("/api/v2/organizations/acme/workspaces/app", "/app/acme/workspaces/app"):
        env.container.__dict__.pop("warm_window", None)  # a new API instance: its own once a minute
        response = env.client.get(path, headers=env.headers, cookies={COOKIE: cookie})
        assert response.status_code == 200, response.text
        warm_window._background.submit(lambda: None).result(10)  # type: ignore[union-attr]  # noqa: SLF001
    assert writes == []
    assert kicks == [{"warm": "acme"}] * 2  # once a minute per instance; the scaler ticks once for both
