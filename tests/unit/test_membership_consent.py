"""Nobody joins an organization without consent, and nothing tells an organization whether a username exists:
team members are members of the organization already; an existing account is invited (unseen by the
organization) and joins when it accepts; invitations by e-mail (go-tfe's, the tfe provider's) stay invited
until accepted, may already be put in teams, and are bounded per organization."""

from __future__ import annotations

from typing import Any

from run_helpers import RunEnv, make_run_env
from terrace.domain import limits
from terrace.domain.principal import PrincipalKind


def _as(env: RunEnv, token: str, method: str, path: str, body: Any = None) -> Any:
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/vnd.api+json"}
    return env.client.request(method, f"/api/v2{path}", json=body, headers=headers)


def _mallory(env: RunEnv) -> tuple[str, str]:
    """Anyone: a user who creates an organization of their own with a team; returns (token, team id)."""
    user = env.container.accounts.create_user("mallory", "mallory@example.com")
    token = env.container.accounts.issue_token(PrincipalKind.USER, user.id).secret
    org = {"data": {"type": "organizations", "attributes": {"name": "evil", "email": "m@example.com"}}}
    assert _as(env, token, "POST", "/organizations", org).status_code == 201
    team = _as(
        env, token, "POST", "/organizations/evil/teams", {"data": {"type": "teams", "attributes": {"name": "t"}}}
    )
    return token, str(team.json()["data"]["id"])


def _invite_user(env: RunEnv, token: str, username: str) -> Any:
    body = {"data": {"type": "organization-memberships",
                     "relationships": {"user": {"data": {"type": "users", "id": username}}}}}  # fmt: skip
    return _as(env, token, "POST", "/organizations/evil/organization-memberships", body)


def _detail(response: Any) -> str:
    return str(response.json()["errors"][0]["detail"])


def test_a_team_takes_members_of_its_organization_only_and_never_tells_whether_a_username_exists() -> None:
    env = make_run_env()  # alice exists
    mallory, team = _mallory(env)
    for name in ("alice", "nobody-at-all"):
        added = _as(
            env, mallory, "POST", f"/teams/{team}/relationships/users", {"data": [{"type": "users", "id": name}]}
        )
        assert added.status_code == 404 and _detail(added) == f"user {name} not found"
    members = _as(env, mallory, "GET", "/organizations/evil/organization-memberships").json()["data"]
    assert len(members) == 1  # mallory's own
    assert env.api("GET", "/organizations/evil").status_code == 404  # alice is no member of it


def test_an_invitation_by_username_is_the_invitees_to_accept_and_unseen_until_then() -> None:
    env = make_run_env()
    mallory, team = _mallory(env)
    there, absent = _invite_user(env, mallory, "alice"), _invite_user(env, mallory, "nobody-at-all")
    assert there.status_code == absent.status_code == 202
    assert there.json()["data"] is None and absent.json()["data"] is None
    listed = _as(env, mallory, "GET", "/organizations/evil/organization-memberships?include=user").json()
    assert len(listed["data"]) == 1 and "alice" not in str(listed)
    add = {"data": [{"type": "users", "id": "alice"}]}
    assert _as(env, mallory, "POST", f"/teams/{team}/relationships/users", add).status_code == 404  # not yet
    assert env.api("GET", "/organizations/evil").status_code == 404  # alice: an invitation is no membership
    [invitation] = [m for m in env.api("GET", "/organization-memberships").json()["data"]
                    if m["relationships"]["organization"]["data"]["id"] == "evil"]  # fmt: skip
    assert invitation["attributes"]["status"] == "invited"
    assert _as(env, mallory, "GET", f"/organization-memberships/{invitation['id']}").status_code == 404
    assert _as(env, mallory, "POST", f"/organization-memberships/{invitation['id']}/actions/accept").status_code == 404
    accepted = env.api("POST", f"/organization-memberships/{invitation['id']}/actions/accept")
    assert accepted.status_code == 200 and accepted.json()["data"]["attributes"]["status"] == "active"
    assert env.api("GET", "/organizations/evil").status_code == 200
    assert _as(env, mallory, "POST", f"/teams/{team}/relationships/users", add).status_code == 204
    listed = _as(env, mallory, "GET", "/organizations/evil/organization-memberships").json()["data"]
    assert "alice@example.com" in [m["attributes"]["email"] for m in listed]  # seen once accepted


def test_an_invitation_by_username_joins_no_team_before_it_is_accepted() -> None:
    env = make_run_env()
    mallory, team = _mallory(env)
    body = {"data": {"type": "organization-memberships",
                     "relationships": {"user": {"data": {"type": "users", "id": "alice"}},
                                       "teams": {"data": [{"type": "teams", "id": team}]}}}}  # fmt: skip
    refused = _as(env, mallory, "POST", "/organizations/evil/organization-memberships", body)
    assert (
        refused.status_code == 422 and refused.json()["errors"][0]["source"]["pointer"] == "/data/relationships/teams"
    )
    own = env.api("GET", "/organization-memberships").json()["data"]
    assert [m["relationships"]["organization"]["data"]["id"] for m in own] == ["acme"]  # nothing was written


def test_e_mail_invitations_stay_invited_until_accepted_and_teams_may_hold_them() -> None:
    """go-tfe's flows: invite by e-mail (the user is included), add the membership, or its username, to a team."""
    env = make_run_env()
    team = env.api("POST", "/organizations/acme/teams", {"data": {"type": "teams", "attributes": {"name": "devs"}}})
    team_id = team.json()["data"]["id"]
    invite = {"data": {"type": "organization-memberships", "attributes": {"email": "New@Example.com"}}}
    created = env.api("POST", "/organizations/acme/organization-memberships", invite)
    assert created.status_code == 201, created.text
    member = created.json()
    assert member["data"]["attributes"] == {"status": "invited", "email": "new@example.com"}
    [user] = member["included"]
    by_id = {"data": [{"type": "organization-memberships", "id": member["data"]["id"]}]}
    assert env.api("POST", f"/teams/{team_id}/relationships/organization-memberships", by_id).status_code == 204
    by_name = {"data": [{"type": "users", "id": user["attributes"]["username"]}]}
    assert env.api("DELETE", f"/teams/{team_id}/relationships/users", by_name).status_code == 204
    assert env.api("POST", f"/teams/{team_id}/relationships/users", by_name).status_code == 204
    token = env.container.accounts.issue_token(PrincipalKind.USER, user["id"]).secret
    assert _as(env, token, "GET", "/organizations/acme").status_code == 404  # invited: not a member yet
    again = env.api("POST", "/organizations/acme/organization-memberships", invite)
    assert again.status_code == 409 and user["attributes"]["username"] not in _detail(again)
    assert (
        _as(env, token, "POST", f"/organization-memberships/{member['data']['id']}/actions/accept").status_code == 200
    )
    assert _as(env, token, "GET", "/organizations/acme").status_code == 200


def test_pending_invitations_are_bounded_per_organization() -> None:
    env = make_run_env()
    for n in range(limits.PENDING_INVITATIONS_MAX):
        invite = {"data": {"type": "organization-memberships", "attributes": {"email": f"p{n}@example.com"}}}
        assert env.api("POST", "/organizations/acme/organization-memberships", invite).status_code == 201
    invite = {"data": {"type": "organization-memberships", "attributes": {"email": "one-more@example.com"}}}
    refused = env.api("POST", "/organizations/acme/organization-memberships", invite)
    assert refused.status_code == 429 and refused.json()["errors"][0]["status"] == "429"
    assert env.container.table.get("useremail#one-more@example.com", "claim") is None  # no account made for it


def test_an_invitee_in_the_owners_team_owns_nothing_until_accepting() -> None:
    env = make_run_env()
    owners = env.api("GET", "/organizations/acme/teams?filter[names]=owners").json()["data"][0]["id"]
    invite = {"data": {"type": "organization-memberships", "attributes": {"email": "heir@example.com"},
                       "relationships": {"teams": {"data": [{"type": "teams", "id": owners}]}}}}  # fmt: skip
    member = env.api("POST", "/organizations/acme/organization-memberships", invite).json()
    heir = member["data"]["relationships"]["user"]["data"]["id"]
    token = env.container.accounts.issue_token(PrincipalKind.USER, heir)
    patch = {"data": {"type": "organizations", "attributes": {"email": "heir@example.com"}}}
    assert _as(env, token.secret, "PATCH", "/organizations/acme", patch).status_code == 404
    alice = {"data": [{"type": "users", "id": "alice"}]}
    assert env.api("DELETE", f"/teams/{owners}/relationships/users", alice).status_code == 409  # no owner left
    accept = f"/organization-memberships/{member['data']['id']}/actions/accept"
    assert _as(env, token.secret, "POST", accept).status_code == 200
    assert _as(env, token.secret, "PATCH", "/organizations/acme", patch).status_code == 200
    assert env.api("DELETE", f"/teams/{owners}/relationships/users", alice).status_code == 204


def test_a_caller_sends_a_bounded_number_of_invitations_a_day_in_all_organizations(monkeypatch: Any) -> None:
    """Each e-mail invitation makes an account, and anyone may create organizations: the count is per caller."""
    from terrace.domain import clock

    env = make_run_env()
    mallory, _ = _mallory(env)
    monkeypatch.setattr(limits, "INVITATIONS_PER_DAY", 3)
    monkeypatch.setattr(clock, "now_iso", lambda: "2026-01-01T12:00:00.000Z")
    for org in ("evil", "evil2"):
        body = {"data": {"type": "organizations", "attributes": {"name": org, "email": "m@example.com"}}}
        _as(env, mallory, "POST", "/organizations", body)
    sent = []
    for n, org in enumerate(("evil", "evil", "evil2", "evil2")):
        invite = {"data": {"type": "organization-memberships", "attributes": {"email": f"v{n}@example.com"}}}
        sent.append(_as(env, mallory, "POST", f"/organizations/{org}/organization-memberships", invite).status_code)
    assert sent == [201, 201, 201, 429]
    assert _invite_user(env, mallory, "alice").status_code == 429  # by username too, before any name is looked up
    assert _invite_user(env, mallory, "nobody-at-all").status_code == 429
    assert env.container.table.get("useremail#v3@example.com", "claim") is None
    monkeypatch.setattr(clock, "now_iso", lambda: "2026-01-02T12:00:00.000Z")  # the next day
    invite = {"data": {"type": "organization-memberships", "attributes": {"email": "v3@example.com"}}}
    assert _as(env, mallory, "POST", "/organizations/evil2/organization-memberships", invite).status_code == 201
