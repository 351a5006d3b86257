"""An organization renamed twice (so its storage key is neither of its later names) is shown by its current name
everywhere a name belongs: the TFC API (relationships, ids, links and `included` of every kind of thing it holds),
the admin API, account details, the web UI, the runner protocol and the http state backend. Neither the storage key
nor the name in between appears anywhere. New organizations created afterwards under the old names work and see none
of the renamed one's data."""

from __future__ import annotations

import base64
import json
import re
from typing import Any

import pytest
from fastapi.testclient import TestClient
from run_helpers import RunEnv, make_run_env
from state_helpers import state_bytes, sv_body
from terrace.domain.principal import PrincipalKind
from terrace.web.app import create_app
from ui_helpers import sign_in

KEY = "keyorg-qx"  # the name it is created with: its storage key for life
MIDDLE = "midorg-qx"
NOW = "noworg-qx"
PEER = "peerorg-qx"  # never renamed: shares its modules with the renamed one
SSH_KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\nAAAA\n-----END OPENSSH PRIVATE KEY-----\n"


LOCK_INFO = {"ID": "6a1f0c4e-0000-4000-8000-000000000001", "Operation": "OperationTypeApply", "Info": "",
             "Who": "alice@laptop", "Version": "1.0.3", "Created": "2026-01-01T00:00:00Z", "Path": ""}  # fmt: skip


def _status_text(response: Any) -> tuple[int, str]:
    return response.status_code, response.text


def doc(kind: str, attributes: dict[str, Any] | None = None, **relationships: tuple[str, str]) -> dict[str, Any]:
    data: dict[str, Any] = {"type": kind, "attributes": attributes or {}}
    if relationships:
        data["relationships"] = {k: {"data": {"type": t, "id": i}} for k, (t, i) in relationships.items()}
    return {"data": data}


class Audit:
    """Calls endpoints and records every answer that failed or named the organization by anything but `name`."""

    def __init__(self, env: RunEnv, admin: dict[str, str], name: str, stale: tuple[str, ...], strict: bool = False):
        self.env, self.admin, self.name, self.stale, self.strict = env, admin, name, stale, strict
        self.leaks: list[str] = []

    def check(self, label: str, status: int, text: str, expect: int | None = None) -> str:
        if (status >= 400) if expect is None else status != expect:
            self.leaks.append(f"{label}: {status} {text[:200]}")
        for old in self.stale:
            if old in text:
                at = text.index(old)
                self.leaks.append(f"{label}: names {old!r}: ...{text[max(0, at - 120) : at + 60]}...")
        assert not (self.strict and self.leaks), self.leaks
        return text

    def api(
        self, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None, expect: int | None = None
    ) -> Any:
        response = self.env.client.request(method, f"/api/v2{path}", json=body, headers=headers or self.env.headers)
        self.check(f"{method} {path}", response.status_code, response.text, expect)
        return response.json() if response.content else None

    def get(self, path: str, headers: dict[str, str] | None = None) -> Any:
        return self.api("GET", path, headers=headers)


def populate(env: RunEnv, org: str, suffix: str) -> dict[str, str]:
    """Workspace, variable, tag, team (+ token, member, grant), project, SSH key, invitation, made under `org`."""
    a = Audit(env, {}, org, (), strict=True)
    ws = a.api("POST", f"/organizations/{org}/workspaces", doc("workspaces", {"name": f"ws-{suffix}"}))["data"]["id"]
    a.api("POST", f"/workspaces/{ws}/vars", doc("vars", {"key": f"v{suffix}", "value": "1", "category": "env"}))
    a.api("POST", f"/workspaces/{ws}/relationships/tags", {"data": [{"type": "tags", "attributes": {"name": suffix}}]})
    team = a.api("POST", f"/organizations/{org}/teams", doc("teams", {"name": f"team-{suffix}"}))["data"]["id"]
    a.api("POST", f"/teams/{team}/authentication-token")
    user = env.container.accounts.create_user(f"user-{suffix}", f"{suffix}@example.com")
    member = a.api(
        "POST",
        f"/organizations/{org}/organization-memberships",
        {"data": {"type": "organization-memberships", "attributes": {"email": user.email},
                  "relationships": {"teams": {"data": [{"type": "teams", "id": team}]}}}},
    )["data"]["id"]  # fmt: skip
    grant = doc("team-workspaces", {"access": "read"}, team=("teams", team), workspace=("workspaces", ws))
    a.api("POST", "/team-workspaces", grant)
    project = a.api("POST", f"/organizations/{org}/projects", doc("projects", {"name": f"p-{suffix}"}))["data"]["id"]
    a.api("POST", "/team-projects", doc("team-projects", {"access": "read"}, team=("teams", team),
                                        project=("projects", project)))  # fmt: skip
    ssh = a.api("POST", f"/organizations/{org}/ssh-keys", doc("ssh-keys", {"name": suffix, "value": SSH_KEY}))
    return {"ws": ws, "team": team, "project": project, "member": member, "ssh": ssh["data"]["id"]}


def run_to_applied(env: RunEnv, ws: str) -> str:
    run = env.create_run(env.upload_config(workspace_id=ws), workspace_id=ws)
    env.work_next()
    assert env.api("POST", f"/runs/{run['id']}/actions/apply").status_code == 202
    env.work_next()
    return str(run["id"])


def rename(env: RunEnv, old: str, new: str) -> None:
    response = env.api("PATCH", f"/organizations/{old}", doc("organizations", {"name": new}))
    assert response.status_code == 200, response.text


@pytest.fixture
def renamed() -> tuple[RunEnv, dict[str, str], dict[str, dict[str, str]], str]:
    env = make_run_env(organization=KEY)
    root = env.container.accounts.create_user("root", "root@example.com", site_admin=True)
    admin = {
        **env.headers,
        "Authorization": f"Bearer {env.container.accounts.issue_token(PrincipalKind.USER, root.id).secret}",
    }
    made = {"first": populate(env, KEY, "first")}
    assert (
        env.api("POST", "/organizations", doc("organizations", {"name": PEER, "email": "p@example.com"})).status_code
        == 201
    )
    consumers = {"data": [{"type": "organizations", "id": KEY}]}
    path = f"/api/v2/admin/organizations/{PEER}/relationships/module-consumers"
    assert env.client.patch(path, json=consumers, headers=admin).status_code == 204
    run_id = run_to_applied(env, env.workspace_id)
    rename(env, KEY, MIDDLE)
    made["second"] = populate(env, MIDDLE, "second")
    rename(env, MIDDLE, NOW)
    made["third"] = populate(env, NOW, "third")
    return env, admin, made, run_id


def walk_api(a: Audit, made: dict[str, dict[str, str]], run_id: str, ws_id: str) -> None:
    org = a.name
    a.get("/organizations")
    a.get(f"/organizations/{org}")
    a.get(f"/organizations/{org}/entitlement-set")
    a.get(f"/organizations/{org}/workspaces?include=organization,current_run,current_state_version,outputs,project")
    a.get(f"/organizations/{org}/workspaces/app?include=organization,project")
    a.get(f"/workspaces/{ws_id}?include=organization,current_run")
    a.get(f"/organizations/{org}/runs?include=workspace")
    a.get(f"/organizations/{org}/runs/queue")
    a.get(f"/organizations/{org}/capacity")
    a.get(f"/organizations/{org}/resources")
    a.get(f"/runs/{run_id}?include=workspace,workspace.organization,plan,apply,configuration_version,created_by")
    a.get(f"/workspaces/{ws_id}/runs")
    a.get(f"/workspaces/{ws_id}/configuration-versions")
    a.get(f"/workspaces/{ws_id}/state-versions")
    a.get(f"/state-versions?filter[organization][name]={org}&filter[workspace][name]=app")
    a.get(f"/workspaces/{ws_id}/current-state-version")
    a.get(f"/workspaces/{ws_id}/vars")
    a.get(f"/organizations/{org}/teams")
    a.get(f"/organizations/{org}/tags")
    a.get(f"/organizations/{org}/projects")
    a.get(f"/organizations/{org}/ssh-keys")
    a.get(f"/organizations/{org}/organization-memberships?include=user,teams")
    issued = a.api("POST", f"/organizations/{org}/authentication-token")["data"]["attributes"]["token"]
    a.get(f"/organizations/{org}/authentication-token")
    a.get("/account/details")
    a.get("/account/details", {"Authorization": f"Bearer {issued}"})  # the organization token's service account
    a.get(f"/organizations/{org}/workspaces", {"Authorization": f"Bearer {issued}"})
    for part in made.values():
        a.get(f"/workspaces/{part['ws']}?include=organization,project")
        a.get(f"/workspaces/{part['ws']}/relationships/tags")
        a.get(f"/workspaces/{part['ws']}/tag-bindings")
        a.get(f"/teams/{part['team']}")
        a.get(f"/teams/{part['team']}/authentication-token")
        a.get(f"/projects/{part['project']}")
        a.get(f"/team-workspaces?filter[workspace][id]={part['ws']}")
        a.get(f"/team-projects?filter[project][id]={part['project']}")
        a.get(f"/organization-memberships/{part['member']}?include=user,teams")
        a.get(f"/ssh-keys/{part['ssh']}")
    # the admin API
    a.get("/admin/organizations?include=owners", a.admin)
    a.get(f"/admin/organizations/{org}", a.admin)
    a.get(f"/admin/organizations/{org}/relationships/module-consumers", a.admin)
    consumers = a.get(f"/admin/organizations/{PEER}/relationships/module-consumers", a.admin)
    assert [o["id"] for o in consumers["data"]] == [org]
    a.get("/admin/users?include=organizations", a.admin)
    a.get("/admin/workspaces?include=organization,current_run", a.admin)
    a.get(f"/admin/workspaces/{ws_id}", a.admin)
    a.get("/admin/runs?include=workspace,workspace.organization", a.admin)


def walk_ui(a: Audit, env: RunEnv, run_id: str) -> None:
    browser = TestClient(create_app(env.container), base_url="https://testserver", follow_redirects=False)
    token = env.headers["Authorization"].removeprefix("Bearer ")
    assert sign_in(browser, token).status_code == 303
    base = f"/app/{a.name}/workspaces"
    for path in (
        "/app",
        base,
        f"{base}/new",
        f"/app/{a.name}/search?q=null",
        f"{base}/app",
        f"{base}/app/runs",
        f"{base}/app/runs/{run_id}",
        f"{base}/app/runs/{run_id}/live",
        f"{base}/app/runs/{run_id}/logs/plan",
        f"{base}/app/variables",
        f"{base}/app/settings",
        f"{base}/app/states",
        "/app/account/tokens",
    ):
        response = browser.get(path)
        a.check(f"UI {path}", response.status_code, response.text)
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', browser.get(f"{base}/new").text)
    assert csrf is not None
    made = browser.post(f"{base}/new", data={"csrf_token": csrf.group(1), "name": "from-ui", "execution_mode": "local"})
    a.check("UI create workspace", made.status_code, made.headers.get("location", ""), expect=303)
    assert made.headers["location"] == f"{base}/from-ui"
    a.check("UI new workspace", *_status_text(browser.get(f"{base}/from-ui")))


def test_a_twice_renamed_organization_is_shown_by_its_current_name_everywhere(renamed: Any) -> None:
    env, admin, made, run_id = renamed
    audit = Audit(env, admin, NOW, (KEY, MIDDLE))
    # state written after the renames, through the API and the http backend, and a run whose job a runner claims
    assert env.api("POST", f"/workspaces/{env.workspace_id}/actions/lock", {}).status_code == 200
    pushed = env.api("POST", f"/workspaces/{env.workspace_id}/state-versions", sv_body(state_bytes(1), 1))
    audit.check("push state", pushed.status_code, pushed.text)
    assert env.api("POST", f"/workspaces/{env.workspace_id}/actions/unlock").status_code == 200
    basic = {"Authorization": "Basic " + base64.b64encode(f"x:{env.headers['Authorization'][7:]}".encode()).decode()}
    state = env.client.get(f"/state/v1/{NOW}/app", headers=basic)
    audit.check("http backend GET", state.status_code, state.text)
    # a lock taken through the API is `<current name>/<workspace>` to the http backend, for writes and force-unlock
    audit.api("POST", f"/workspaces/{env.workspace_id}/actions/lock", {})
    held = env.client.request("LOCK", f"/state/v1/{NOW}/app", headers=basic, json=LOCK_INFO)
    audit.check("http backend LOCK while locked", held.status_code, held.text, expect=423)
    assert json.loads(held.text)["ID"] == f"{NOW}/app"
    write = env.client.post(f"/state/v1/{NOW}/app?ID={NOW}/app", headers=basic, content=state_bytes(2))
    audit.check("http backend POST ?ID=<name>/<workspace>", write.status_code, write.text)
    audit.api("POST", f"/workspaces/{env.workspace_id}/actions/unlock")
    audit.check(
        "http backend LOCK",
        *_status_text(env.client.request("LOCK", f"/state/v1/{NOW}/app", headers=basic, json=LOCK_INFO)),
    )
    forced = env.client.request("UNLOCK", f"/state/v1/{NOW}/app", headers=basic, json={"ID": f"{NOW}/app"})
    audit.check("http backend force-unlock <name>/<workspace>", forced.status_code, forced.text)
    # conflicts name the organization by its name too
    audit.api("PATCH", f"/workspaces/{made['first']['ws']}", doc("workspaces", {"name": "app"}), expect=409)
    again = {"data": {"type": "organization-memberships", "attributes": {"email": "first@example.com"}}}
    audit.api("POST", f"/organizations/{NOW}/organization-memberships", again, expect=409)
    for old in (KEY, MIDDLE):
        assert env.client.get(f"/state/v1/{old}/app", headers=basic).status_code == 404
    assert not audit.leaks, "\n".join(audit.leaks)
    env.create_run(env.upload_config())
    spec = env.claim()
    assert spec["organization"] == NOW
    audit.check("runner job spec", 200, json.dumps(spec))
    walk_api(audit, made, run_id, env.workspace_id)
    walk_ui(audit, env, run_id)
    assert not audit.leaks, "\n".join(audit.leaks)


def test_new_organizations_under_the_old_names_work_and_see_nothing_of_the_renamed_one(renamed: Any) -> None:
    """Released names are reserved now; organizations renamed before were not, and their old names may have been
    taken since: a new organization under such a name sees nothing of the renamed one."""
    env, admin, made, run_id = renamed
    mallory = env.container.accounts.create_user("mallory", "m@example.com")
    theirs = {
        **env.headers,
        "Authorization": f"Bearer {env.container.accounts.issue_token(PrincipalKind.USER, mallory.id).secret}",
    }
    ids = [v for part in made.values() for v in part.values()] + [run_id, env.workspace_id]
    for old, owner in ((KEY, theirs), (MIDDLE, env.headers)):
        body = doc("organizations", {"name": old, "email": "n@example.com"})
        reserved = env.client.post("/api/v2/organizations", headers=owner, json=body)
        assert reserved.status_code == 409, reserved.text  # a released name stays the renamed organization's
        # as after a rename made before released names were reserved: the name is free, its storage key is not
        env.container.table.delete(f"orgname#{old}", "orgname")
        created = env.client.post("/api/v2/organizations", headers=owner,
                                  json=doc("organizations", {"name": old, "email": "n@example.com"}))  # fmt: skip
        assert created.status_code == 201, created.text
        fresh = make_fresh_workspace(env, old, owner)
        audit = Audit(env, admin, old, tuple(ids))
        for path in (
            f"/organizations/{old}/workspaces",
            f"/organizations/{old}/runs",
            f"/organizations/{old}/teams",
            f"/organizations/{old}/tags",
            f"/organizations/{old}/projects",
            f"/organizations/{old}/ssh-keys",
            f"/organizations/{old}/organization-memberships",
            f"/organizations/{old}/resources",
            f"/workspaces/{fresh}/runs",
            f"/workspaces/{fresh}/vars",
        ):
            audit.get(path, owner)
        audit.get(f"/admin/organizations/{old}", admin)
        listed = env.client.get(f"/api/v2/organizations/{old}/workspaces", headers=owner).json()["data"]
        assert [w["attributes"]["name"] for w in listed] == ["app"] and listed[0]["id"] == fresh
        assert not audit.leaks, "\n".join(audit.leaks)
    # the owner of the organization now named as the renamed one's storage key reaches nothing of it
    for part in made.values():
        for path in (f"/workspaces/{part['ws']}", f"/teams/{part['team']}", f"/projects/{part['project']}",
                     f"/organization-memberships/{part['member']}", f"/ssh-keys/{part['ssh']}",
                     f"/team-workspaces?filter[workspace][id]={part['ws']}",
                     f"/team-projects?filter[project][id]={part['project']}"):  # fmt: skip
            assert env.client.get(f"/api/v2{path}", headers=theirs).status_code == 404, path
    assert env.client.get(f"/api/v2/runs/{run_id}", headers=theirs).status_code == 404
    # the renamed organization keeps all its own, and stays its peer's module consumer (the new ones do not)
    names = {w["attributes"]["name"] for w in env.api("GET", f"/organizations/{NOW}/workspaces").json()["data"]}
    assert names == {"app", "ws-first", "ws-second", "ws-third"}
    path = f"/api/v2/admin/organizations/{PEER}/relationships/module-consumers"
    assert [o["id"] for o in env.client.get(path, headers=admin).json()["data"]] == [NOW]


def make_fresh_workspace(env: RunEnv, org: str, headers: dict[str, str]) -> str:
    body = doc("workspaces", {"name": "app"})
    response = env.client.post(f"/api/v2/organizations/{org}/workspaces", json=body, headers=headers)
    assert response.status_code == 201, response.text
    return str(response.json()["data"]["id"])


def test_projects_are_authorized_by_their_organization_key_never_by_a_name_that_equals_it() -> None:
    """A project stores its organization's key; once renamed, that key may become another organization's name, whose
    owner must still get 404 for the project (reading it, renaming it, deleting it)."""
    env = make_run_env(organization=KEY)
    project = env.api("POST", f"/organizations/{KEY}/projects", doc("projects", {"name": "secret"})).json()["data"]
    rename(env, KEY, NOW)
    mallory = env.container.accounts.create_user("mallory", "m@example.com")
    theirs = {
        **env.headers,
        "Authorization": f"Bearer {env.container.accounts.issue_token(PrincipalKind.USER, mallory.id).secret}",
    }
    body = doc("organizations", {"name": KEY, "email": "m@example.com"})
    assert env.client.post("/api/v2/organizations", json=body, headers=theirs).status_code == 409  # reserved
    env.container.table.delete(f"orgname#{KEY}", "orgname")  # as after a rename made before names were reserved
    assert env.client.post("/api/v2/organizations", json=body, headers=theirs).status_code == 201
    path = f"/api/v2/projects/{project['id']}"
    assert env.client.get(path, headers=theirs).status_code == 404
    assert env.client.patch(path, json=doc("projects", {"name": "taken"}), headers=theirs).status_code == 404
    assert env.client.delete(path, headers=theirs).status_code == 404
    mine = env.api("GET", f"/projects/{project['id']}").json()["data"]
    assert mine["attributes"]["name"] == "secret" and mine["relationships"]["organization"]["data"]["id"] == NOW
