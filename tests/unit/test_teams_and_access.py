"""Teams, memberships, projects and service tokens through the API: the rules that keep an organization
from being locked out, revocation on the very next request, and other organizations' things as 404."""

from __future__ import annotations

from typing import Any

from run_helpers import RunEnv, join, make_run_env
from terrace.domain.principal import PrincipalKind


def _call(env: RunEnv, token: str, method: str, path: str, body: Any = None) -> Any:
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/vnd.api+json"}
    return env.client.request(method, f"/api/v2{path}", json=body, headers=headers)


def _user(env: RunEnv, name: str, *, member: bool = True) -> tuple[str, str]:
    """A user with a token; a member of acme (invited and accepted) unless `member` is False."""
    user = env.container.accounts.create_user(name, f"{name}@example.com")
    token = env.container.accounts.issue_token(PrincipalKind.USER, user.id).secret
    if member:
        join(env, token, name)
    return user.id, token


def _team(env: RunEnv, name: str, **attrs: Any) -> dict[str, Any]:
    body = {"data": {"type": "teams", "attributes": {"name": name, **attrs}}}
    response = env.api("POST", "/organizations/acme/teams", body)
    assert response.status_code == 201, response.text
    return dict(response.json()["data"])


def _members(env: RunEnv, team_id: str, method: str, *usernames: str) -> Any:
    body = {"data": [{"type": "users", "id": name} for name in usernames]}
    return env.api(method, f"/teams/{team_id}/relationships/users", body)


def _owners(env: RunEnv) -> dict[str, Any]:
    teams = env.api("GET", "/organizations/acme/teams?filter[names]=owners").json()["data"]
    assert len(teams) == 1
    return dict(teams[0])


def test_the_creator_is_an_owner_and_a_member_and_the_owners_team_cannot_go() -> None:
    env = make_run_env()
    owners = _owners(env)
    assert owners["attributes"]["organization-access"]["manage-workspaces"] is True
    assert owners["attributes"]["permissions"]["can-destroy"] is False
    memberships = env.api("GET", "/organizations/acme/organization-memberships").json()["data"]
    assert [m["attributes"]["status"] for m in memberships] == ["active"]
    assert env.api("DELETE", f"/teams/{owners['id']}").status_code == 403
    assert _members(env, owners["id"], "DELETE", "alice").status_code == 409  # never emptied
    devs = _team(env, "devs")
    assert _members(env, devs["id"], "POST", "alice").status_code == 204
    me = memberships[0]["id"]
    assert env.api("DELETE", f"/organization-memberships/{me}").status_code == 409  # the last owner stays...
    assert env.api("GET", f"/teams/{devs['id']}").json()["data"]["attributes"]["users-count"] == 1  # ...whole
    assert env.api("GET", "/workspaces/" + env.workspace_id).status_code == 200


def test_a_second_owner_may_leave_the_first_and_owners_powers_follow_the_team() -> None:
    env = make_run_env()
    bob_id, bob = _user(env, "bob", member=False)
    owners = _owners(env)
    assert _call(env, bob, "GET", "/organizations/acme").status_code == 404  # not a member yet
    assert _members(env, owners["id"], "POST", "bob").status_code == 404  # nor added before joining
    join(env, bob, "bob")
    assert _members(env, owners["id"], "POST", "bob").status_code == 204
    assert _call(env, bob, "PATCH", "/organizations/acme", {"data": {"type": "organizations",
                 "attributes": {"email": "new@example.com"}}}).status_code == 200  # fmt: skip
    assert _members(env, owners["id"], "DELETE", "alice").status_code == 204
    patch = {"data": {"type": "organizations", "attributes": {"email": "alice@example.com"}}}
    assert env.api("PATCH", "/organizations/acme", patch).status_code == 403  # alice: a member of no team now,
    assert env.api("GET", f"/workspaces/{env.workspace_id}").status_code == 404  # who sees no workspace
    assert env.api("GET", "/organizations/acme").status_code == 200  # but still her organization


def test_manage_teams_access_lets_a_non_owner_run_teams_but_not_the_owners_team() -> None:
    env = make_run_env()
    _, carol = _user(env, "carol")
    admins = _team(env, "team-admins", **{"organization-access": {"manage-teams": True}})
    assert _members(env, admins["id"], "POST", "carol").status_code == 204
    body = {"data": {"type": "teams", "attributes": {"name": "devs"}}}
    created = _call(env, carol, "POST", "/organizations/acme/teams", body)
    assert created.status_code == 201, created.text
    devs = created.json()["data"]["id"]
    add = {"data": [{"type": "users", "id": "carol"}]}
    assert _call(env, carol, "POST", f"/teams/{devs}/relationships/users", add).status_code == 204
    owners = _owners(env)
    assert _call(env, carol, "POST", f"/teams/{owners['id']}/relationships/users", add).status_code == 403
    assert _call(env, carol, "PATCH", "/organizations/acme", {"data": {"type": "organizations",
                 "attributes": {"email": "x@example.com"}}}).status_code == 403  # fmt: skip


def test_removing_access_counts_from_the_next_request() -> None:
    env = make_run_env()
    dave_id, dave = _user(env, "dave")
    team = _team(env, "readers")
    assert _members(env, team["id"], "POST", "dave").status_code == 204
    rel = {"team": {"data": {"type": "teams", "id": team["id"]}},
           "workspace": {"data": {"type": "workspaces", "id": env.workspace_id}}}  # fmt: skip
    grant = env.api("POST", "/team-workspaces", {"data": {"type": "team-workspaces", "attributes": {"access": "read"},
                                                          "relationships": rel}})  # fmt: skip
    assert grant.status_code == 201, grant.text
    assert _call(env, dave, "GET", f"/workspaces/{env.workspace_id}").status_code == 200
    assert _call(env, dave, "POST", f"/workspaces/{env.workspace_id}/actions/lock", {}).status_code == 403
    patch = {"data": {"type": "team-workspaces", "attributes": {"access": "write"}}}
    assert env.api("PATCH", f"/team-workspaces/{grant.json()['data']['id']}", patch).status_code == 200
    assert _call(env, dave, "POST", f"/workspaces/{env.workspace_id}/actions/lock", {}).status_code == 200
    assert _call(env, dave, "POST", f"/workspaces/{env.workspace_id}/actions/unlock").status_code == 200
    assert _members(env, team["id"], "DELETE", "dave").status_code == 204
    assert _call(env, dave, "GET", f"/workspaces/{env.workspace_id}").status_code == 404


def test_team_and_organization_tokens_die_on_revocation_and_with_their_team() -> None:
    env = make_run_env()
    team = _team(env, "ci")
    token = env.api("POST", f"/teams/{team['id']}/authentication-token", None).json()["data"]["attributes"]["token"]
    assert _call(env, token, "GET", "/organizations/acme").status_code == 200
    assert _call(env, token, "GET", f"/workspaces/{env.workspace_id}").status_code == 404  # a team without access
    newer = env.api("POST", f"/teams/{team['id']}/authentication-token", None).json()["data"]["attributes"]["token"]
    assert _call(env, token, "GET", "/organizations/acme").status_code == 401  # replaced
    assert env.api("DELETE", f"/teams/{team['id']}").status_code == 204
    assert _call(env, newer, "GET", "/organizations/acme").status_code == 401
    org_token = env.api("POST", "/organizations/acme/authentication-token", {"data": {"type": "authentication-token",
                        "attributes": {"expired-at": "2099-01-01T00:00:00.000Z"}}})  # fmt: skip
    assert org_token.json()["data"]["attributes"]["expired-at"] == "2099-01-01T00:00:00.000Z"
    secret = org_token.json()["data"]["attributes"]["token"]
    assert _call(env, secret, "GET", f"/workspaces/{env.workspace_id}").status_code == 200
    assert env.api("DELETE", "/organizations/acme/authentication-token").status_code == 204
    assert _call(env, secret, "GET", f"/workspaces/{env.workspace_id}").status_code == 401
    past = env.api("POST", "/organizations/acme/authentication-token", {"data": {"type": "authentication-token",
                   "attributes": {"expired-at": "2024-01-15T22:03:04Z"}}})  # fmt: skip
    assert _call(env, past.json()["data"]["attributes"]["token"], "GET", "/organizations/acme").status_code == 401


def test_projects_hold_workspaces_and_the_default_one_stays() -> None:
    env = make_run_env()
    projects = env.api("GET", "/organizations/acme/projects").json()["data"]
    default = next(p for p in projects if p["attributes"]["name"] == "Default Project")
    ws = env.api("GET", f"/workspaces/{env.workspace_id}?include=project").json()
    assert ws["data"]["relationships"]["project"]["data"]["id"] == default["id"]
    assert ws["included"][0]["attributes"]["name"] == "Default Project"
    assert env.api("DELETE", f"/projects/{default['id']}").status_code == 403
    body = {"data": {"type": "projects", "attributes": {"name": "payments"}}}
    payments = env.api("POST", "/organizations/acme/projects", body).json()["data"]["id"]
    rel = {"project": {"data": {"type": "projects", "id": payments}}}
    moved = env.api("PATCH", f"/workspaces/{env.workspace_id}", {"data": {"type": "workspaces", "relationships": rel}})
    assert moved.json()["data"]["relationships"]["project"]["data"]["id"] == payments
    assert env.api("DELETE", f"/projects/{payments}").status_code == 409  # it holds a workspace
    listed = env.api("GET", f"/organizations/acme/workspaces?filter[project][id]={payments}").json()["data"]
    assert [w["id"] for w in listed] == [env.workspace_id]


def test_other_organizations_teams_projects_and_grants_are_not_found() -> None:
    env = make_run_env()
    _, olga = _user(env, "olga", member=False)
    org = {"data": {"type": "organizations", "attributes": {"name": "other", "email": "o@example.com"}}}
    assert _call(env, olga, "POST", "/organizations", org).status_code == 201
    body = {"data": {"type": "teams", "attributes": {"name": "theirs"}}}
    theirs = _call(env, olga, "POST", "/organizations/other/teams", body).json()["data"]["id"]
    their_projects = _call(env, olga, "GET", "/organizations/other/projects").json()["data"]
    assert env.api("GET", f"/teams/{theirs}").status_code == 404
    assert env.api("GET", f"/projects/{their_projects[0]['id']}").status_code == 404
    assert env.api("GET", "/organizations/other/teams").status_code == 404
    assert env.api("GET", "/organizations/other/organization-memberships").status_code == 404
    rel = {"team": {"data": {"type": "teams", "id": theirs}},
           "workspace": {"data": {"type": "workspaces", "id": env.workspace_id}}}  # fmt: skip
    grant = {"data": {"type": "team-workspaces", "attributes": {"access": "admin"}, "relationships": rel}}
    assert env.api("POST", "/team-workspaces", grant).status_code == 404  # their team, my workspace
    assert _call(env, olga, "POST", "/team-workspaces", grant).status_code == 404  # my workspace, to them


def test_secret_teams_are_seen_by_their_members_and_team_managers_only() -> None:
    env = make_run_env()
    _, erin = _user(env, "erin")
    secret = _team(env, "secret-team")
    shown = _team(env, "open-team", visibility="organization")
    assert _members(env, shown["id"], "POST", "erin").status_code == 204
    names = lambda token: {t["attributes"]["name"] for t in _call(env, token, "GET", "/organizations/acme/teams")  # noqa: E731
                           .json()["data"]}  # fmt: skip
    assert names(erin) == {"open-team"}
    assert _call(env, erin, "GET", f"/teams/{secret['id']}").status_code == 404
    assert {"owners", "secret-team", "open-team"} <= names(env.headers["Authorization"].split(" ", 1)[1])
    assert _members(env, secret["id"], "POST", "erin").status_code == 204
    assert _call(env, erin, "GET", f"/teams/{secret['id']}").status_code == 200


def test_the_entitlement_set_reports_teams_sso_and_agents() -> None:
    env = make_run_env()
    attrs = env.api("GET", "/organizations/acme/entitlement-set").json()["data"]["attributes"]
    assert (attrs["teams"], attrs["sso"], attrs["state-storage"], attrs["operations"]) == (True, True, True, True)
    assert attrs["agents"] is True  # agent pools and `terrace agent`
    assert (attrs["private-module-registry"], attrs["sentinel"]) == (True, False)  # OPA only, no Sentinel
