"""The permission matrix: every endpoint family (API, http backend, log URLs, runner protocol, UI pages)
x every access level (team workspace access read/plan/write/admin/custom, project access, organization
access, owners, a team token, a member without grants, a stranger) x own organization / other organization.

Each cell is one request by a real caller through the app. Expected: the action's status when the caller's
grants include it, 403 when they can read the workspace but not do this, 404 when they cannot read it;
in another organization always 404. Grants are set up through the API itself (teams, memberships,
team-workspaces, team-projects, team tokens).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from event_loops import one_event_loop
from fastapi.testclient import TestClient
from run_helpers import RunEnv, join, make_run_env
from state_helpers import state_bytes
from terrace.domain.principal import PrincipalKind
from terrace.services.access.actions import Action
from terrace.services.access.permissions import WS_ADMIN, WS_PLAN, WS_READ, WS_WRITE
from terrace.web.app import create_app
from ui_helpers import sign_in

EVERYTHING = frozenset(Action)
CUSTOM = frozenset({Action.READ_WORKSPACE, Action.READ_RUNS, Action.QUEUE_RUN, Action.READ_STATE_OUTPUTS})
MEMBER = frozenset({Action.READ_ORGANIZATION, Action.READ_ORGANIZATION_SETTINGS})

# caller -> (how they get access, what they may do in workspace `app` of `acme`)
CALLERS: dict[str, frozenset[Action]] = {
    "owner": EVERYTHING,
    "ws-read": WS_READ | MEMBER,
    "ws-plan": WS_PLAN | MEMBER,
    "ws-write": WS_WRITE | MEMBER,
    "ws-admin": WS_ADMIN | MEMBER,
    "ws-custom": CUSTOM | MEMBER,
    "project-write": WS_WRITE | MEMBER,
    "project-maintain": WS_ADMIN | MEMBER,
    "org-read-workspaces": WS_READ | MEMBER,
    "org-manage-workspaces": WS_ADMIN | MEMBER,
    "team-token-write": WS_WRITE | MEMBER,
    "member-no-grants": MEMBER,
    "stranger": frozenset(),
}


@dataclass
class World:
    env: RunEnv
    tokens: dict[str, str]
    targets: dict[str, dict[str, str]]  # "own"/"other" -> workspace id, name, org, plan id
    ui: Any  # the web UI's app over the same container, shared by the UI cells as one server serves everyone: an
    # app's first request builds its routes (0.2-0.5 s, 120 UI cells), and each cell still signs in afresh
    portal: Any = None  # the one event loop serving every request of the module (`run_helpers.one_event_loop`)


def _api(env: RunEnv, token: str, method: str, path: str, body: Any = None) -> Any:
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/vnd.api+json"}
    return env.client.request(method, f"/api/v2{path}", json=body, headers=headers)


def _ok(response: Any, status: int = 200) -> dict[str, Any]:
    assert response.status_code == status, response.text
    return dict(response.json()["data"]) if response.content else {}


def _user(env: RunEnv, name: str, organization: str | None = "acme") -> str:
    """A user with a token; a member of `organization` (invited and accepted) unless None."""
    user = env.container.accounts.create_user(name, f"{name}@example.com")
    token = env.container.accounts.issue_token(PrincipalKind.USER, user.id).secret
    if organization:
        join(env, token, name, organization)
    return token


def _team(env: RunEnv, name: str, org_access: dict[str, bool] | None = None, members: tuple[str, ...] = ()) -> str:
    attrs: dict[str, Any] = {"name": name, "organization-access": org_access or {}}
    team = _ok(env.api("POST", "/organizations/acme/teams", {"data": {"type": "teams", "attributes": attrs}}), 201)
    users = {"data": [{"type": "users", "id": member} for member in members]}
    if members:
        assert env.api("POST", f"/teams/{team['id']}/relationships/users", users).status_code == 204
    return str(team["id"])


def _grant(env: RunEnv, collection: str, team: str, target: tuple[str, str], attrs: dict[str, Any]) -> None:
    kind, target_id = target
    rel = {"team": {"data": {"type": "teams", "id": team}}, kind: {"data": {"type": f"{kind}s", "id": target_id}}}
    body = {"data": {"type": collection, "attributes": attrs, "relationships": rel}}
    _ok(env.api("POST", f"/{collection}", body), 201)


def _seed_workspace(env: RunEnv, token: str, org: str, ws_id: str, runner: str) -> str:
    """A state and a planned run in the workspace; returns the plan id."""
    env.client.post(f"/state/v1/{org}/app", content=state_bytes(1), headers={"Authorization": f"Bearer {token}"})
    cv = _ok(_api(env, token, "POST", f"/workspaces/{ws_id}/configuration-versions", {"data": {
        "type": "configuration-versions", "attributes": {"auto-queue-runs": False}}}), 201)  # fmt: skip
    key = cv["attributes"]["upload-url"].split("memory://blobs/")[1].split("?")[0]
    from run_helpers import tarball

    env.blobs.put(key, tarball({"main.tf": 'output "x" { value = 1 }'}))
    rel = {"workspace": {"data": {"type": "workspaces", "id": ws_id}},
           "configuration-version": {"data": {"type": "configuration-versions", "id": cv["id"]}}}  # fmt: skip
    run = {"data": {"type": "runs", "attributes": {"plan-only": True}, "relationships": rel}}  # holds no lock
    run = _ok(_api(env, token, "POST", "/runs", run), 201)
    spec = env.claim("r-" + org, token=runner)
    done = {"runner_id": "r-" + org, "status": "finished", "has_changes": True, "resource_additions": 0}
    env.runner("PUT", f"/jobs/{spec['job_id']}/logs?offset=0", content=b"plan log\n", token=runner)
    plan_json = spec["plan_json_upload_url"].split("memory://blobs/")[1].split("?")[0]  # what a plan export reads
    env.blobs.put(plan_json, json.dumps({"format_version": "1.2", "resource_changes": []}).encode())
    assert env.runner("POST", f"/jobs/{spec['job_id']}/finish", json=done, token=runner).status_code == 200
    return str(run["relationships"]["plan"]["data"]["id"])


@pytest.fixture(scope="module")
def world() -> Iterator[World]:
    env = make_run_env()
    with one_event_loop(env.client) as portal:
        yield _world(env, portal)


def _world(env: RunEnv, portal: Any) -> World:
    tokens = {"owner": env.headers["Authorization"].split(" ", 1)[1]}
    skip = ("owner", "team-token-write", "member-no-grants")
    names = {caller: caller.replace("-", "_") for caller in CALLERS if caller not in skip}
    for caller, username in names.items():
        tokens[caller] = _user(env, username, None if caller == "stranger" else "acme")
    member_of = lambda caller: (names[caller],)  # noqa: E731
    ws = ("workspace", env.workspace_id)
    projects = env.api("GET", "/organizations/acme/projects").json()["data"]
    project = ("project", next(p["id"] for p in projects if p["attributes"]["name"] == "Default Project"))
    for level in ("read", "plan", "write", "admin"):
        _grant(
            env, "team-workspaces", _team(env, f"ws-{level}", members=member_of(f"ws-{level}")), ws, {"access": level}
        )
    custom = {"access": "custom", "runs": "plan", "variables": "none", "state-versions": "read-outputs"}
    _grant(env, "team-workspaces", _team(env, "ws-custom", members=member_of("ws-custom")), ws, custom)
    for level in ("write", "maintain"):
        team = _team(env, f"project-{level}", members=member_of(f"project-{level}"))
        _grant(env, "team-projects", team, project, {"access": level})
    _team(env, "org-read", {"read-workspaces": True}, member_of("org-read-workspaces"))
    _team(env, "org-manage", {"manage-workspaces": True}, member_of("org-manage-workspaces"))
    invite = {"data": {"type": "organization-memberships", "attributes": {"email": "member_no_grants@example.com"}}}
    invited = _ok(env.api("POST", "/organizations/acme/organization-memberships", invite), 201)
    member = env.container.accounts.get_user(invited["relationships"]["user"]["data"]["id"])
    tokens["member-no-grants"] = env.container.accounts.issue_token(PrincipalKind.USER, member.id).secret
    assert _api(env, tokens["member-no-grants"], "GET", "/organizations/acme").status_code == 404  # invited only
    _ok(_api(env, tokens["member-no-grants"], "POST", f"/organization-memberships/{invited['id']}/actions/accept"))
    writers = env.api("GET", "/organizations/acme/teams?filter[names]=ws-write").json()["data"][0]["id"]
    tokens["team-token-write"] = _ok(env.api("POST", f"/teams/{writers}/authentication-token", None), 201)[
        "attributes"
    ]["token"]
    own_plan = _seed_workspace(env, tokens["owner"], "acme", env.workspace_id, env.runner_token)
    # another organization, owned by someone else, with a workspace of the same name
    olga = _user(env, "olga", None)
    org = {"data": {"type": "organizations", "attributes": {"name": "other", "email": "o@example.com"}}}
    _ok(_api(env, olga, "POST", "/organizations", org), 201)
    body = {"data": {"type": "workspaces", "attributes": {"name": "app", "execution-mode": "remote"}}}
    other_ws = _ok(_api(env, olga, "POST", "/organizations/other/workspaces", body), 201)["id"]
    other_plan = _seed_workspace(env, olga, "other", other_ws, env.container.runner_credentials.runner_token("other"))
    targets = {
        "own": {"org": "acme", "ws": env.workspace_id, "plan": own_plan, "owner": tokens["owner"]},
        "other": {"org": "other", "ws": other_ws, "plan": other_plan, "owner": olga},
    }
    _team_callers(env, tokens, targets, olga)
    return World(env, tokens, targets, create_app(env.container), portal)


def _team_callers(env: RunEnv, tokens: dict[str, str], targets: dict[str, dict[str, str]], olga: str) -> None:
    """The callers of the team matrix (organization access on teams) and its targets in both organizations."""
    for caller, access in TEAM_CALLER_ACCESS.items():
        tokens[caller] = _user(env, caller.replace("-", "_"))
        _team(env, caller, dict.fromkeys(access, True), (caller.replace("-", "_"),))
    org_token = _ok(env.api("POST", "/organizations/acme/authentication-token", None), 201)
    tokens["organization-token"] = org_token["attributes"]["token"]
    for where, owner in (("own", tokens["owner"]), ("other", olga)):
        org = targets[where]["org"]
        teams = _api(env, owner, "GET", f"/organizations/{org}/teams?filter[names]=owners").json()["data"]
        body = {"data": {"type": "teams", "attributes": {"name": "devs"}}}
        devs = _ok(_api(env, owner, "POST", f"/organizations/{org}/teams", body), 201)
        targets[where].update(owner=owner, owners=teams[0]["id"], devs=devs["id"])


# operations: (family, action needed, status when allowed, call(world, token, target) -> status) ----------
def _log_url(w: World, token: str, t: dict[str, str]) -> int:
    plan = _api(w.env, token, "GET", f"/plans/{t['plan']}")
    if plan.status_code != 200:
        return int(plan.status_code)
    url = plan.json()["data"]["attributes"]["log-read-url"]
    log = w.env.client.get(url)
    assert b"plan log" in log.content
    return int(log.status_code)


def _lock(w: World, token: str, t: dict[str, str]) -> int:
    status = int(_api(w.env, token, "POST", f"/workspaces/{t['ws']}/actions/lock", {"reason": "m"}).status_code)
    if status == 200:
        _ok(_api(w.env, w.tokens["owner"], "POST", f"/workspaces/{t['ws']}/actions/force-unlock"))
    return status


def _http_lock(w: World, token: str, t: dict[str, str]) -> int:
    info = {"ID": "matrix-lock", "Operation": "OperationTypeApply", "Who": "matrix"}
    headers = {"Authorization": f"Bearer {token}"}
    status = int(w.env.client.request("LOCK", f"/state/v1/{t['org']}/app", json=info, headers=headers).status_code)
    if status == 200:
        _ok(_api(w.env, w.tokens["owner"], "POST", f"/workspaces/{t['ws']}/actions/force-unlock"))
    return status


def _create_var(w: World, token: str, t: dict[str, str]) -> int:
    body = {"data": {"type": "vars", "attributes": {"key": "k", "value": "v", "category": "env"}}}
    response = _api(w.env, token, "POST", f"/workspaces/{t['ws']}/vars", body)
    if response.status_code == 201:
        assert (
            _api(
                w.env, w.tokens["owner"], "DELETE", f"/workspaces/{t['ws']}/vars/{response.json()['data']['id']}"
            ).status_code
            == 204
        )
    return int(response.status_code)


def _queue_run(w: World, token: str, t: dict[str, str]) -> int:
    cvs = _api(w.env, w.tokens["owner"], "GET", f"/workspaces/{w.targets['own']['ws']}/configuration-versions")
    cv = cvs.json()["data"][0]["id"]
    rel = {"workspace": {"data": {"type": "workspaces", "id": t["ws"]}},
           "configuration-version": {"data": {"type": "configuration-versions", "id": cv}}}  # fmt: skip
    response = _api(w.env, token, "POST", "/runs", {"data": {"type": "runs", "attributes": {"plan-only": True},
                                                             "relationships": rel}})  # fmt: skip
    return int(response.status_code)


def _queue_query_run(w: World, token: str, t: dict[str, str]) -> int:
    """A query run (`terraform query`) of the workspace's latest configuration: queueing a plan."""
    rel = {"workspace": {"data": {"type": "workspaces", "id": t["ws"]}}}
    body = {"data": {"type": "queries", "attributes": {"source": "tfe-api"}, "relationships": rel}}
    return int(_api(w.env, token, "POST", "/queries", body).status_code)


def _add_itself_as_source(w: World, token: str, t: dict[str, str]) -> int:
    """A workspace as its own source: refused (422) once the caller may manage its run triggers, not before."""
    rel = {"sourceable": {"data": {"type": "workspaces", "id": t["ws"]}}}
    body = {"data": {"type": "run-triggers", "relationships": rel}}
    return int(_api(w.env, token, "POST", f"/workspaces/{t['ws']}/run-triggers", body).status_code)


def _create_plan_export(w: World, token: str, t: dict[str, str]) -> int:
    body = {"data": {"type": "plan-exports", "attributes": {"data-type": "sentinel-mock-bundle-v0"},
                     "relationships": {"plan": {"data": {"type": "plans", "id": t["plan"]}}}}}  # fmt: skip
    return int(_api(w.env, token, "POST", "/plan-exports", body).status_code)


def _delete_plan_export(w: World, token: str, t: dict[str, str]) -> int:
    """HCP's plan exports need "Download Sentinel mocks" (write, admin): deleting one too, not just reading runs."""
    body = {"data": {"type": "plan-exports", "attributes": {"data-type": "sentinel-mock-bundle-v0"},
                     "relationships": {"plan": {"data": {"type": "plans", "id": t["plan"]}}}}}  # fmt: skip
    export = _ok(_api(w.env, t["owner"], "POST", "/plan-exports", body), 201)  # the organization's owner's
    return int(_api(w.env, token, "DELETE", f"/plan-exports/{export['id']}").status_code)


def _ui(path: str) -> Callable[[World, str, dict[str, str]], int]:
    def call(w: World, token: str, t: dict[str, str]) -> int:
        browser = TestClient(w.ui, base_url="https://testserver", follow_redirects=False)  # its own cookies
        browser.portal = w.portal
        assert sign_in(browser, token).status_code == 303
        return int(browser.get(path.format(**t)).status_code)

    return call


def _get(path: str) -> Callable[[World, str, dict[str, str]], int]:
    return lambda w, token, t: int(_api(w.env, token, "GET", path.format(**t)).status_code)


OPERATIONS: dict[str, tuple[Action, int, Callable[[World, str, dict[str, str]], int]]] = {
    "api: read organization": (Action.READ_ORGANIZATION_SETTINGS, 200, _get("/organizations/{org}")),
    "api: read workspace": (Action.READ_WORKSPACE, 200, _get("/workspaces/{ws}")),
    "api: explorer": (Action.READ_ORGANIZATION, 200, _get("/organizations/{org}/explorer?type=workspaces")),
    "api: list runs": (Action.READ_RUNS, 200, _get("/workspaces/{ws}/runs")),
    "api: read variables": (Action.READ_VARIABLES, 200, _get("/workspaces/{ws}/vars")),
    "api: create variable": (Action.WRITE_VARIABLES, 201, _create_var),
    "api: effective variables": (Action.READ_VARIABLES, 200, _get("/workspaces/{ws}/all-vars")),
    "api: workspace's variable sets": (Action.READ_VARIABLES, 200, _get("/workspaces/{ws}/varsets")),
    "api: read state version": (Action.READ_STATE, 200, _get("/workspaces/{ws}/current-state-version")),
    "api: read outputs": (Action.READ_STATE_OUTPUTS, 200, _get("/workspaces/{ws}/current-state-version-outputs")),
    "api: queue run": (Action.QUEUE_RUN, 201, _queue_run),
    "api: queue query run": (Action.QUEUE_RUN, 201, _queue_query_run),
    "api: list query runs": (Action.READ_RUNS, 200, _get("/workspaces/{ws}/queries")),
    "api: list terraform actions": (Action.READ_RUNS, 200, _get("/workspaces/{ws}/terraform-actions")),
    "api: lock": (Action.LOCK_WORKSPACE, 200, _lock),
    "api: team access of workspace": (
        Action.MANAGE_WORKSPACE_ACCESS, 200, _get("/team-workspaces?filter[workspace][id]={ws}")),
    "api: notification configurations": (
        Action.MANAGE_NOTIFICATIONS, 200, _get("/workspaces/{ws}/notification-configurations")),
    "http backend: read state": (Action.READ_STATE, 200, lambda w, tok, t: int(w.env.client.get(
        f"/state/v1/{t['org']}/app", headers={"Authorization": f"Bearer {tok}"}).status_code)),  # fmt: skip
    "http backend: lock": (Action.LOCK_WORKSPACE, 200, _http_lock),
    "log url: plan log": (Action.READ_RUNS, 200, _log_url),
    "api: create plan export": (Action.DOWNLOAD_SENTINEL_MOCKS, 201, _create_plan_export),
    "api: delete plan export": (Action.DOWNLOAD_SENTINEL_MOCKS, 204, _delete_plan_export),
    "api: list run triggers": (
        Action.READ_WORKSPACE, 200, _get("/workspaces/{ws}/run-triggers?filter[run-trigger][type]=inbound")),
    "api: add run trigger": (Action.MANAGE_RUN_TRIGGERS, 422, _add_itself_as_source),
    "ui: workspace page": (Action.READ_WORKSPACE, 200, _ui("/app/{org}/workspaces/app")),
    "ui: run triggers": (Action.READ_WORKSPACE, 200, _ui("/app/{org}/workspaces/app/settings/run-triggers")),
    "ui: variables page": (Action.READ_VARIABLES, 200, _ui("/app/{org}/workspaces/app/variables")),
    "ui: effective variables page": (
        Action.READ_VARIABLES, 200, _ui("/app/{org}/workspaces/app/effective-variables")),
    "ui: notifications page": (Action.MANAGE_NOTIFICATIONS, 200, _ui("/app/{org}/workspaces/app/notifications")),
}  # fmt: skip


def expected(caller: str, action: Action, allowed: int, family: str, where: str) -> int:
    grants = CALLERS[caller]
    if where == "other":
        return 404
    if action in grants:
        return allowed
    if Action.READ_WORKSPACE in grants and action not in (Action.READ_ORGANIZATION, Action.READ_ORGANIZATION_SETTINGS):
        return 404 if family == "ui" else 403  # the UI shows a refusal as not found
    return 404


@pytest.mark.parametrize("where", ["own", "other"])
@pytest.mark.parametrize("operation", list(OPERATIONS))
@pytest.mark.parametrize("caller", list(CALLERS))
def test_permission_matrix(world: World, caller: str, operation: str, where: str) -> None:
    action, allowed, call = OPERATIONS[operation]
    family = operation.split(":")[0]
    if family == "ui" and caller == "team-token-write":
        pytest.skip("the web UI signs in people (user tokens), not team tokens")
    got = call(world, world.tokens[caller], world.targets[where])
    assert got == expected(caller, action, allowed, family, where), f"{caller} {operation} in {where} org"


AUDITOR_READS = {
    "api: audit trail": (Action.READ_AUDIT_TRAIL, 200, _get("/organizations/{org}/audit-trail")),
    "api: token TTL policies": (
        Action.READ_ORGANIZATION_SETTINGS, 200, _get("/organizations/{org}/token-ttl-policies")),
    "ui: organization settings": (Action.READ_ORGANIZATION_SETTINGS, 200, _ui("/app/{org}/settings")),
    "ui: audit trail page": (Action.READ_AUDIT_TRAIL, 200, _ui("/app/{org}/settings/audit-trail")),
}  # fmt: skip


def test_a_site_auditor_reads_every_organizations_settings_and_audit_trail_and_nothing_else(world: World) -> None:
    """A site auditor (no member of either organization) gets every operation of the matrix: its organization
    settings and audit trail in both organizations, 404 for everything else (the whole app:
    tests/unit/test_site_auditor.py)."""
    env = world.env
    auditor = env.container.accounts.create_user("auditor", "auditor@example.com")
    env.container.users.set_flags(auditor.id, site_auditor=True)
    token = env.container.accounts.issue_token(PrincipalKind.USER, auditor.id).secret
    got, want = {}, {}
    for name, (action, allowed, call) in {**OPERATIONS, **AUDITOR_READS}.items():
        for where in ("own", "other"):
            got[name, where] = call(world, token, world.targets[where])
            want[name, where] = (
                allowed if action in (Action.READ_ORGANIZATION_SETTINGS, Action.READ_AUDIT_TRAIL) else 404
            )
    assert got == want


@pytest.mark.parametrize("caller", list(CALLERS))
def test_runner_protocol_refuses_every_caller_but_runner_tokens(world: World, caller: str) -> None:
    """The runner protocol is for runner tokens only, whatever a caller's access; another organization's
    runner cannot touch this organization's job (404), its own can."""
    env = world.env
    assert env.runner("POST", "/jobs/next", json={"runner_id": "x"}, token=world.tokens[caller]).status_code == 403
    # enrollment takes a code, not a caller: no token of any kind turns a wrong code into a runner token
    assert env.runner("POST", "/enroll", json={"code": "tre.guess"}, token=world.tokens[caller]).status_code == 401
    _queue_run(world, world.tokens["owner"], world.targets["own"])
    job = env.claim("r-own")["job_id"]
    beat = {"runner_id": "r-own"}
    assert env.runner("POST", f"/jobs/{job}/heartbeat", json=beat, token=world.tokens[caller]).status_code == 404
    other_runner = env.container.runner_credentials.runner_token("other")
    assert env.runner("POST", f"/jobs/{job}/heartbeat", json=beat, token=other_runner).status_code == 404
    assert env.runner("POST", f"/jobs/{job}/heartbeat", json=beat).status_code == 200


# run options: the permission a run amounts to (`authz.run_action`), for every caller ------------------------
APPLIES = {"auto-apply": True}
RUN_OPTIONS: dict[str, tuple[dict[str, Any], Action, bool]] = {
    # option -> (attributes, action the run needs, whether it auto-applies once created)
    "plain": ({}, Action.QUEUE_RUN, False),
    "plan-only": ({"plan-only": True}, Action.QUEUE_RUN, False),
    "plan-only with auto-apply": ({"plan-only": True, **APPLIES}, Action.QUEUE_RUN, True),
    "destroy": ({"is-destroy": True}, Action.QUEUE_RUN, False),
    "refresh-only": ({"refresh-only": True}, Action.QUEUE_RUN, False),
    "targets": ({"target-addrs": ["null_resource.a"]}, Action.QUEUE_RUN, False),
    "replace": ({"replace-addrs": ["null_resource.a"]}, Action.QUEUE_RUN, False),
    "allow-empty-apply": ({"allow-empty-apply": True}, Action.QUEUE_RUN, False),
    "variables": ({"variables": [{"key": "x", "value": '"1"'}]}, Action.QUEUE_RUN, False),
    "save-plan with auto-apply": ({"save-plan": True, **APPLIES}, Action.QUEUE_RUN, True),
    "auto-apply": (APPLIES, Action.APPLY_RUN, True),
    "destroy with auto-apply": ({"is-destroy": True, **APPLIES}, Action.APPLY_RUN, True),
    "refresh-only with auto-apply": ({"refresh-only": True, **APPLIES}, Action.APPLY_RUN, True),
    "targets with auto-apply": ({"target-addrs": ["null_resource.a"], **APPLIES}, Action.APPLY_RUN, True),
    "replace with auto-apply": ({"replace-addrs": ["null_resource.a"], **APPLIES}, Action.APPLY_RUN, True),
    "empty apply with auto-apply": ({"allow-empty-apply": True, **APPLIES}, Action.APPLY_RUN, True),
    "variables with auto-apply": ({"variables": [{"key": "x", "value": '"1"'}], **APPLIES}, Action.APPLY_RUN, True),
    "the workspace's auto-apply": ({}, Action.QUEUE_RUN, True),  # applies only the runs of those who may apply
}  # fmt: skip


def _workspace_auto_apply(w: World, on: bool) -> None:
    body = {"data": {"type": "workspaces", "attributes": {"auto-apply": on}}}
    _ok(_api(w.env, w.tokens["owner"], "PATCH", f"/workspaces/{w.targets['own']['ws']}", body))


@pytest.mark.parametrize("option", list(RUN_OPTIONS))
@pytest.mark.parametrize("caller", list(CALLERS))
def test_run_options_need_the_permission_the_run_amounts_to(world: World, caller: str, option: str) -> None:
    """A run that applies without a later confirmation needs permission to apply; one that waits for a
    confirmation (or never applies) needs permission to queue plans. The workspace's own auto-apply
    applies only the runs of callers who may apply: the others' runs wait for someone who may."""
    attrs, action, auto_apply = RUN_OPTIONS[option]
    ws, owner = world.targets["own"]["ws"], world.tokens["owner"]
    grants = CALLERS[caller]
    lock = _api(world.env, owner, "POST", f"/workspaces/{ws}/actions/lock", {"reason": "runs stay pending"})
    assert lock.status_code == 200, lock.text
    workspace_default = option == "the workspace's auto-apply"
    try:
        if workspace_default:
            _workspace_auto_apply(world, True)
        cvs = _api(world.env, owner, "GET", f"/workspaces/{ws}/configuration-versions").json()["data"]
        rel = {"workspace": {"data": {"type": "workspaces", "id": ws}},
               "configuration-version": {"data": {"type": "configuration-versions", "id": cvs[-1]["id"]}}}  # fmt: skip
        body = {"data": {"type": "runs", "attributes": attrs, "relationships": rel}}
        response = _api(world.env, world.tokens[caller], "POST", "/runs", body)
        run = response.json()["data"] if response.status_code == 201 else None
        if run is not None and not run["attributes"]["plan-only"]:  # never left to take the workspace's lock
            _ok(_api(world.env, owner, "POST", f"/runs/{run['id']}/actions/discard", {}), 202)
        assert response.status_code == expected(caller, action, 201, "api", "own"), f"{caller} {option}"
        if run is not None:
            applies = auto_apply and (not workspace_default or Action.APPLY_RUN in grants)
            assert run["attributes"]["auto-apply"] is applies, f"{caller} {option}"
    finally:
        if workspace_default:
            _workspace_auto_apply(world, False)
        _ok(_api(world.env, owner, "POST", f"/workspaces/{ws}/actions/unlock"))


# teams: the owners team is an owner's; organization access is granted by those who may, up to what they hold ----
TEAM_CALLER_ACCESS: dict[str, tuple[str, ...]] = {
    "manage-teams": ("manage-teams",),
    "manage-org-access": ("manage-teams", "manage-organization-access"),
    "manage-org-access-and-workspaces": ("manage-teams", "manage-organization-access", "manage-workspaces"),
}
TEAM_CALLERS = ["owner", "organization-token", *TEAM_CALLER_ACCESS, "member-no-grants", "stranger"]
MEMBER_NAME = "ws_read"  # a member of acme (through a team)


def _members_of(w: World, token: str, t: dict[str, str], method: str) -> int:
    body = {"data": [{"type": "users", "id": MEMBER_NAME}]}
    return int(_api(w.env, token, method, f"/teams/{t['owners']}/relationships/users", body).status_code)


def _owners_add(w: World, token: str, t: dict[str, str]) -> int:
    status = _members_of(w, token, t, "POST")
    _members_of(w, t["owner"], t, "DELETE")
    return status


def _owners_remove(w: World, token: str, t: dict[str, str]) -> int:
    _members_of(w, t["owner"], t, "POST")
    status = _members_of(w, token, t, "DELETE")
    _members_of(w, t["owner"], t, "DELETE")
    return status


def _owners_token(method: str) -> Callable[[World, str, dict[str, str]], int]:
    def call(w: World, token: str, t: dict[str, str]) -> int:
        if method != "POST":
            _ok(_api(w.env, t["owner"], "POST", f"/teams/{t['owners']}/authentication-token"), 201)
        return int(_api(w.env, token, method, f"/teams/{t['owners']}/authentication-token").status_code)

    return call


def _patch_team(
    team: str, attrs: dict[str, Any], restore: dict[str, Any]
) -> Callable[[World, str, dict[str, str]], int]:
    def call(w: World, token: str, t: dict[str, str]) -> int:
        body = {"data": {"type": "teams", "attributes": attrs}}
        status = int(_api(w.env, token, "PATCH", f"/teams/{t[team]}", body).status_code)
        _ok(_api(w.env, t["owner"], "PATCH", f"/teams/{t[team]}", {"data": {"type": "teams", "attributes": restore}}))
        return status

    return call


def _create_team_with(access: dict[str, bool]) -> Callable[[World, str, dict[str, str]], int]:
    def call(w: World, token: str, t: dict[str, str]) -> int:
        body = {"data": {"type": "teams", "attributes": {"name": "made", "organization-access": access}}}
        response = _api(w.env, token, "POST", f"/organizations/{t['org']}/teams", body)
        if response.status_code == 201:
            assert _api(w.env, t["owner"], "DELETE", f"/teams/{response.json()['data']['id']}").status_code == 204
        return int(response.status_code)

    return call


GRANT = {"organization-access": {"manage-workspaces": True}}
NO_GRANT = {"organization-access": {"manage-workspaces": False}}
OWNER_ONLY = {"owner": 0, "organization-token": 403, "manage-teams": 403, "manage-org-access": 403,
              "manage-org-access-and-workspaces": 403, "member-no-grants": 404, "stranger": 404}  # fmt: skip
GRANTERS = {**OWNER_ONLY, "organization-token": 0, "manage-org-access-and-workspaces": 0}
TEAM_MANAGERS = {**GRANTERS, "manage-teams": 0, "manage-org-access": 0}
# operation -> (call, status when allowed, who is allowed (0) or what they get instead)
TEAM_OPERATIONS: dict[str, tuple[Callable[[World, str, dict[str, str]], int], int, dict[str, int]]] = {
    "owners team: create its token": (_owners_token("POST"), 201, OWNER_ONLY),
    "owners team: read its token": (_owners_token("GET"), 200, OWNER_ONLY),
    "owners team: delete its token": (_owners_token("DELETE"), 204, OWNER_ONLY),
    "owners team: add a member": (_owners_add, 204, OWNER_ONLY),
    "owners team: remove a member": (_owners_remove, 204, OWNER_ONLY),
    "owners team: set its sso-team-id": (_patch_team("owners", {"sso-team-id": "grp"}, {"sso-team-id": ""}), 200,
                                         OWNER_ONLY),
    "owners team: change its visibility": (_patch_team("owners", {"visibility": "organization"},
                                                       {"visibility": "secret"}), 200, OWNER_ONLY),
    "owners team: delete it": (lambda w, tok, t: int(_api(w.env, tok, "DELETE", f"/teams/{t['owners']}").status_code),
                               403, OWNER_ONLY),
    "team: grant organization access": (_patch_team("devs", GRANT, NO_GRANT), 200, GRANTERS),
    "team: create with organization access": (_create_team_with({"manage-workspaces": True}), 201,
                                              {**GRANTERS, "member-no-grants": 403}),  # it sees its organization
    "team: revoke organization access": (_patch_team("devs", NO_GRANT, NO_GRANT), 200, TEAM_MANAGERS),
    "team: rename": (_patch_team("devs", {"name": "devs2", **NO_GRANT}, {"name": "devs"}), 200, TEAM_MANAGERS),
}  # fmt: skip


@pytest.mark.parametrize("where", ["own", "other"])
@pytest.mark.parametrize("operation", list(TEAM_OPERATIONS))
@pytest.mark.parametrize("caller", TEAM_CALLERS)
def test_team_matrix(world: World, caller: str, operation: str, where: str) -> None:
    """Everything done to the owners team is an owner's (tokens, members, settings, sso-team-id); changing a
    team's organization access needs manage-organization-access and grants no more than the caller holds;
    organization access sent back unchanged is no change."""
    call, allowed, who = TEAM_OPERATIONS[operation]
    got = call(world, world.tokens[caller], world.targets[where])
    want = 404 if where == "other" else (who[caller] or allowed)
    assert got == want, f"{caller} {operation} in {where} org"


# hidden answers as absent, in the same words ---------------------------------------------------------------------
def _same_404(hidden: Any, absent: Any, hidden_ref: str, absent_ref: str) -> None:
    assert hidden.status_code == absent.status_code == 404
    assert hidden.json() == json.loads(absent.text.replace(absent_ref, hidden_ref))


@pytest.mark.parametrize("caller", [c for c in CALLERS if Action.READ_WORKSPACE not in CALLERS[c]])
def test_a_hidden_workspace_organization_or_token_answers_as_an_absent_one(world: World, caller: str) -> None:
    w, token, t = world, world.tokens[caller], world.targets["other"]
    get = lambda path: _api(w.env, token, "GET", path)  # noqa: E731
    _same_404(get(f"/organizations/{t['org']}/workspaces/app"), get(f"/organizations/{t['org']}/workspaces/nope"),
              "app", "nope")  # fmt: skip
    _same_404(get(f"/organizations/{t['org']}"), get("/organizations/nopeorg"), t["org"], "nopeorg")
    _same_404(get(f"/workspaces/{t['ws']}"), get("/workspaces/ws-nope0000000000"), t["ws"], "ws-nope0000000000")
    if caller != "stranger":  # members of acme: its workspace `app` is hidden from them
        own = world.targets["own"]
        _same_404(get(f"/organizations/{own['org']}/workspaces/app"), get(f"/organizations/{own['org']}/workspaces/x"),
                  "app", "x")  # fmt: skip
    alice = w.env.container.accounts.user_id_of("alice")
    assert alice is not None
    owner_token = w.env.container.accounts.list_tokens(alice)[0].id
    _same_404(get(f"/authentication-tokens/{owner_token}"), get("/authentication-tokens/at-nope00000000"),
              owner_token, "at-nope00000000")  # fmt: skip


# a registry module's tests: its organization's module managers only (`domain/module_tests.py`) --------------------
@pytest.mark.parametrize("where", ["own", "other"])
@pytest.mark.parametrize("caller", list(CALLERS))
def test_module_tests_are_for_module_managers_only(world: World, caller: str, where: str) -> None:
    """None of these callers but the owner manages modules: every member sees the module (403), whatever their
    workspace access; a stranger, or anyone in another organization, finds nothing (404)."""
    env, t = world.env, world.targets[where]
    owner = t.get("owner", world.tokens["owner"])
    module = {"data": {"type": "registry-modules", "attributes": {"name": "matrix", "provider": "aws"}}}
    _api(env, owner, "POST", f"/organizations/{t['org']}/registry-modules", module)  # 409 once made
    base = f"/organizations/{t['org']}/tests/registry-modules/private/{t['org']}/matrix/aws"
    want = 404 if where == "other" or caller == "stranger" else 200 if caller == "owner" else 403
    assert _api(env, world.tokens[caller], "GET", f"{base}/test-runs").status_code == want
    assert _api(env, world.tokens[caller], "GET", f"{base}/vars").status_code == want
    made = _api(env, world.tokens[caller], "POST", f"{base}/test-runs/configuration-versions")
    assert made.status_code == (201 if want == 200 else want)
