"""Team tokens as HCP Terraform has them: any number of described tokens per team (each description unique in its
team) beside the legacy description-less one, read and revoked by id, listed per team and per organization, with
who created them; who may manage them (`Authorizer.require_team_tokens`); and that none outlives its team or its
organization."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from run_helpers import RunEnv, join, make_run_env
from terrace.domain.principal import PrincipalKind
from terrace.domain.tokens import default_expiry


def _call(env: RunEnv, token: str, method: str, path: str, body: Any = None) -> Any:
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/vnd.api+json"}
    return env.client.request(method, f"/api/v2{path}", json=body, headers=headers)


def _user(env: RunEnv, name: str) -> tuple[str, str]:
    user = env.container.accounts.create_user(name, f"{name}@example.com")
    token = env.container.accounts.issue_token(PrincipalKind.USER, user.id).secret
    join(env, token, name)
    return user.id, token


def _team(env: RunEnv, name: str, **attrs: Any) -> str:
    body = {"data": {"type": "teams", "attributes": {"name": name, **attrs}}}
    response = env.api("POST", "/organizations/acme/teams", body)
    assert response.status_code == 201, response.text
    return str(response.json()["data"]["id"])


def _described(description: Any, expired_at: str | None = None) -> dict[str, Any]:
    attributes: dict[str, Any] = {"description": description}
    if expired_at:
        attributes["expired-at"] = expired_at
    return {"data": {"type": "authentication-tokens", "attributes": attributes}}


def _create(env: RunEnv, team_id: str, description: Any, token: str | None = None, **kw: Any) -> Any:
    path = f"/teams/{team_id}/authentication-tokens"
    return (_call(env, token, "POST", path, _described(description, **kw)) if token
            else env.api("POST", path, _described(description, **kw)))  # fmt: skip


def _ok(response: Any, status: int = 200) -> dict[str, Any]:
    assert response.status_code == status, response.text
    return dict(response.json()["data"]) if response.content else {}


def test_a_team_has_many_described_tokens_beside_its_legacy_one() -> None:
    env = make_run_env()
    team = _team(env, "ci")
    legacy = _ok(env.api("POST", f"/teams/{team}/authentication-token", None), 201)
    first = _ok(_create(env, team, "deploys"), 201)
    second = _ok(_create(env, team, "nightly"), 201)
    empty = _ok(_create(env, team, ""), 201)  # the empty description is a description, unlike none
    assert legacy["attributes"]["description"] is None
    assert [t["attributes"]["description"] for t in (first, second, empty)] == ["deploys", "nightly", ""]
    secrets = [t["attributes"]["token"] for t in (legacy, first, second, empty)]
    assert all(_call(env, s, "GET", "/organizations/acme").status_code == 200 for s in secrets)
    # a new legacy token replaces the legacy one only
    newer = _ok(env.api("POST", f"/teams/{team}/authentication-token", None), 201)
    assert _call(env, secrets[0], "GET", "/organizations/acme").status_code == 401
    assert all(_call(env, s, "GET", "/organizations/acme").status_code == 200 for s in secrets[1:])
    assert _ok(env.api("GET", f"/teams/{team}/authentication-token"))["id"] == newer["id"]
    listed = env.api("GET", f"/teams/{team}/authentication-tokens").json()["data"]
    assert {t["id"] for t in listed} == {newer["id"], first["id"], second["id"], empty["id"]}
    assert all(t["attributes"]["token"] is None for t in listed)  # the secret is shown once
    # deleting the legacy token leaves the described ones
    assert env.api("DELETE", f"/teams/{team}/authentication-token").status_code == 204
    assert env.api("GET", f"/teams/{team}/authentication-token").status_code == 404
    assert env.api("DELETE", f"/teams/{team}/authentication-token").status_code == 404
    assert _call(env, secrets[1], "GET", "/organizations/acme").status_code == 200


def test_a_description_is_unique_in_its_team_until_its_token_is_revoked() -> None:
    env = make_run_env()
    team, other = _team(env, "ci"), _team(env, "ops")
    first = _ok(_create(env, team, "deploys"), 201)
    again = _create(env, team, "deploys")
    assert again.status_code == 422
    error = again.json()["errors"][0]
    # go-tfe's ErrInvalidDescriptionConflict is this title and detail
    assert (error["title"], error["detail"]) == (
        "invalid attributes",
        "Validation failed: Description has already been taken",
    )
    assert _create(env, team, "").status_code == 201 and _create(env, team, "").status_code == 422
    assert _create(env, other, "deploys").status_code == 201  # another team's description
    assert _create(env, team, "Deploys").status_code == 201
    assert env.api("DELETE", f"/authentication-tokens/{first['id']}").status_code == 204
    assert _create(env, team, "deploys").status_code == 201  # free again
    assert _create(env, team, 7).status_code == 422
    assert _create(env, team, "x" * 2001).status_code == 422
    assert _create(env, team, "late", expired_at="soon").status_code == 422


def test_read_and_revoke_by_id_and_what_a_token_shows() -> None:
    env = make_run_env()
    team = _team(env, "ci")
    alice = env.container.accounts.find_user("alice")
    assert alice is not None
    legacy = _ok(env.api("POST", f"/teams/{team}/authentication-token", None), 201)
    described = _ok(_create(env, team, "deploys", expired_at="2031-02-03T04:05:06Z"), 201)
    assert described["attributes"]["expired-at"] == "2031-02-03T04:05:06.000Z"
    for created in (legacy, described):
        read = _ok(env.api("GET", f"/authentication-tokens/{created['id']}"))
        assert read["type"] == "authentication-tokens" and read["attributes"]["token"] is None
        assert read["relationships"]["team"]["data"] == {"type": "teams", "id": team}
        assert read["relationships"]["created-by"]["data"] == {"type": "users", "id": alice.id}
        assert read["attributes"]["description"] == created["attributes"]["description"]
    # created by a team token and by the organization's token: the team, the organization by its name
    owners = env.api("GET", "/organizations/acme/teams?filter[names]=owners").json()["data"][0]["id"]
    owners_token = _ok(env.api("POST", f"/teams/{owners}/authentication-token", None), 201)["attributes"]["token"]
    by_team = _ok(_create(env, team, "made by a team", token=owners_token), 201)
    assert by_team["relationships"]["created-by"]["data"] == {"type": "teams", "id": owners}
    org_token = _ok(env.api("POST", "/organizations/acme/authentication-token", None), 201)["attributes"]["token"]
    by_org = _ok(_create(env, team, "made by the organization", token=org_token), 201)
    assert by_org["relationships"]["created-by"]["data"] == {"type": "organizations", "id": "acme"}
    # revoked by id: a legacy token and a described one
    for created in (legacy, described):
        assert env.api("DELETE", f"/authentication-tokens/{created['id']}").status_code == 204
        assert _call(env, created["attributes"]["token"], "GET", "/organizations/acme").status_code == 401
        assert env.api("GET", f"/authentication-tokens/{created['id']}").status_code == 404
    assert env.api("GET", "/authentication-tokens/nonexistent-token-id").status_code == 404
    assert env.api("DELETE", "/authentication-tokens/nonexistent-token-id").status_code == 404


def test_without_an_expiry_a_team_token_expires_two_years_later() -> None:
    env = make_run_env()
    team = _team(env, "ci")
    for response in (env.api("POST", f"/teams/{team}/authentication-token", None), _create(env, team, "d")):
        attributes = _ok(response, 201)["attributes"]
        created = datetime.fromisoformat(attributes["created-at"].replace("Z", "+00:00"))
        expires = datetime.fromisoformat(attributes["expired-at"].replace("Z", "+00:00"))
        assert abs((expires - default_expiry(created)).total_seconds()) < 1
    assert default_expiry(datetime(2028, 2, 29, 12, tzinfo=UTC)) == datetime(2030, 3, 1, 12, tzinfo=UTC)
    assert default_expiry(datetime(2026, 12, 5, 1, 2, 3, tzinfo=UTC)) == datetime(2028, 12, 5, 1, 2, 3, tzinfo=UTC)


def test_the_organizations_team_tokens_filtered_and_sorted() -> None:
    env = make_run_env()
    ci, ops = _team(env, "ci-bots"), _team(env, "ops")
    soon = _ok(env.api("POST", f"/teams/{ci}/authentication-token",
                       {"data": {"attributes": {"expired-at": "2030-01-01T00:00:00Z"}}}), 201)  # fmt: skip
    later = _ok(_create(env, ops, "later", expired_at="2031-01-01T00:00:00Z"), 201)
    latest = _ok(_create(env, ci, "latest", expired_at="2032-01-01T00:00:00Z"), 201)

    def ids(query: str) -> list[str]:
        response = env.api("GET", f"/organizations/acme/team-tokens{query}")
        assert response.status_code == 200, response.text
        return [t["id"] for t in response.json()["data"]]

    assert ids("") == [soon["id"], later["id"], latest["id"]]  # by expiry, soonest first
    assert ids("?sort=-expired-at") == [latest["id"], later["id"], soon["id"]]
    assert ids("?q=CI-b") == [soon["id"], latest["id"]]  # a part of the team's name, whatever its case
    assert ids("?q=nobody") == []
    assert ids("?sort=team-name") == [soon["id"], latest["id"], later["id"]]
    assert env.api("GET", "/organizations/acme/team-tokens?sort=secret").status_code == 422
    assert env.api("GET", "/organizations/nowhere/team-tokens").status_code == 404
    assert ids("?page[size]=1&page[number]=2") == [later["id"]]


def test_members_manage_their_teams_tokens_when_the_team_allows_it() -> None:
    env = make_run_env()
    open_team, closed_team = _team(env, "open"), _team(env, "closed", **{"allow-member-token-management": False})
    _, bob = _user(env, "bob")
    _, carol = _user(env, "carol")  # a member of the organization, of neither team
    for team in (open_team, closed_team):
        body = {"data": [{"type": "users", "id": "bob"}]}
        assert env.api("POST", f"/teams/{team}/relationships/users", body).status_code == 204
    mine = _ok(_create(env, open_team, "bob's", token=bob), 201)
    assert _ok(_call(env, bob, "POST", f"/teams/{open_team}/authentication-token"), 201)
    assert _call(env, bob, "GET", f"/authentication-tokens/{mine['id']}").status_code == 200
    assert _create(env, closed_team, "bob's", token=bob).status_code == 403
    assert _call(env, bob, "POST", f"/teams/{closed_team}/authentication-token").status_code == 403
    closed = _ok(_create(env, closed_team, "owner's"), 201)
    assert _call(env, bob, "GET", f"/authentication-tokens/{closed['id']}").status_code == 404
    assert _call(env, bob, "DELETE", f"/authentication-tokens/{closed['id']}").status_code == 404
    listed = _call(env, bob, "GET", "/organizations/acme/team-tokens").json()["data"]
    assert {t["relationships"]["team"]["data"]["id"] for t in listed} == {open_team}
    # a member of neither team: nothing of theirs, whatever the team allows
    assert _create(env, open_team, "carol's", token=carol).status_code in (403, 404)
    assert _call(env, carol, "GET", f"/authentication-tokens/{mine['id']}").status_code == 404
    assert _call(env, carol, "DELETE", f"/authentication-tokens/{mine['id']}").status_code == 404
    assert _call(env, carol, "GET", "/organizations/acme/team-tokens").json()["data"] == []
    assert _call(env, bob, "DELETE", f"/authentication-tokens/{mine['id']}").status_code == 204
    # a user's own token stays its user's alone
    own = _ok(_call(env, bob, "POST", f"/users/{env.container.accounts.user_id_of('bob')}/authentication-tokens",
                    {"data": {"attributes": {"description": "laptop"}}}), 201)  # fmt: skip
    assert _call(env, bob, "GET", f"/authentication-tokens/{own['id']}").status_code == 200
    assert _call(env, carol, "GET", f"/authentication-tokens/{own['id']}").status_code == 404


def test_every_token_of_a_team_dies_with_it() -> None:
    env = make_run_env()
    team = _team(env, "ci")
    secrets = [_ok(env.api("POST", f"/teams/{team}/authentication-token", None), 201)["attributes"]["token"],
               _ok(_create(env, team, "a"), 201)["attributes"]["token"],
               _ok(_create(env, team, "b"), 201)["attributes"]["token"]]  # fmt: skip
    assert env.api("DELETE", f"/teams/{team}").status_code == 204
    assert all(_call(env, s, "GET", "/organizations/acme").status_code == 401 for s in secrets)


def test_no_team_token_outlives_its_organization() -> None:
    """An organization's key is its name: deleted and made again under that name, its owners team has the same id.
    A team token of the old one must not act in the new one (before: the owners team's token owned it)."""
    env = make_run_env()
    body = {"data": {"type": "organizations", "attributes": {"name": "gone", "email": "ops@example.com"}}}
    assert env.api("POST", "/organizations", body).status_code == 201
    owners = env.api("GET", "/organizations/gone/teams?filter[names]=owners").json()["data"][0]["id"]
    team = {"data": {"type": "teams", "attributes": {"name": "devs"}}}
    devs = _ok(env.api("POST", "/organizations/gone/teams", team), 201)["id"]
    tokens = [_ok(env.api("POST", f"/teams/{owners}/authentication-token", None), 201)["attributes"]["token"],
              _ok(_create(env, owners, "described"), 201)["attributes"]["token"],
              _ok(_create(env, devs, "described"), 201)["attributes"]["token"]]  # fmt: skip
    assert _call(env, tokens[0], "GET", "/organizations/gone").status_code == 200
    assert env.api("DELETE", "/organizations/gone").status_code == 204
    assert env.api("POST", "/organizations", body).status_code == 201  # the same name again
    for secret in tokens:
        assert _call(env, secret, "GET", "/organizations/gone").status_code == 401
        assert _call(env, secret, "DELETE", "/organizations/gone").status_code == 401
