"""An organization's token TTL policies (go-tfe v1.109's `TestOrganizationTokenTTLPolicies*`): every kind listed
(the default two years until set), a change names some kinds and answers all four; once set, an organization or
team token asked for beyond it is refused and one asked for without an expiry is capped at it. Members read them,
only who manages the organization changes them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from policy_helpers import call, member
from run_helpers import RunEnv, make_run_env

PATH = "/organizations/acme/token-ttl-policies"
DAY_MS = 86_400_000


def _update(env: RunEnv, *items: tuple[str, int]) -> Any:
    body = {"data": {"type": "organization-token-ttl-policies", "attributes": {
        "token-ttl-policies": [{"token-type": k, "max-ttl-ms": ms} for k, ms in items]}}}  # fmt: skip
    return env.api("PATCH", PATH, body)


def _expiry(answer: Any) -> datetime:
    assert answer.status_code == 201, answer.text
    return datetime.fromisoformat(answer.json()["data"]["attributes"]["expired-at"].replace("Z", "+00:00"))


def test_policies_are_listed_changed_and_cap_organization_and_team_tokens() -> None:
    env = make_run_env()
    listed = env.api("GET", PATH).json()["data"]
    assert {(p["attributes"]["token-type"], p["attributes"]["max-ttl-ms"]) for p in listed} == {
        (k, 63_113_904_000) for k in ("organization", "team", "user", "audit_trails")
    }
    changed = _update(env, ("organization", DAY_MS), ("team", 7 * DAY_MS))
    assert changed.status_code == 200, changed.text
    by_kind = {p["attributes"]["token-type"]: p for p in changed.json()["data"]}
    assert len(by_kind) == 4 and by_kind["organization"]["attributes"]["max-ttl-ms"] == DAY_MS
    assert by_kind["user"]["attributes"]["max-ttl-ms"] == 63_113_904_000 and by_kind["team"]["id"]
    user = {
        p["attributes"]["token-type"]: p["attributes"]["max-ttl-ms"]
        for p in _update(env, ("user", DAY_MS)).json()["data"]
    }
    assert user == {"organization": DAY_MS, "team": 7 * DAY_MS, "user": DAY_MS, "audit_trails": 63_113_904_000}
    assert {p["attributes"]["max-ttl-ms"] for p in env.api("GET", PATH).json()["data"]} == {DAY_MS, 7 * DAY_MS,
                                                                                           63_113_904_000}  # fmt: skip

    now = datetime.now(UTC)
    capped = _expiry(env.api("POST", "/organizations/acme/authentication-token", {"data": {"attributes": {}}}))
    assert now + timedelta(hours=23) < capped <= now + timedelta(days=1, minutes=1)
    later = (now + timedelta(days=3)).strftime("%Y-%m-%dT%H:%M:%SZ")
    beyond = env.api(
        "POST", "/organizations/acme/authentication-token", {"data": {"attributes": {"expired-at": later}}}
    )
    assert beyond.status_code == 422 and "at most" in beyond.json()["errors"][0]["detail"]
    team = env.api("POST", "/organizations/acme/teams", {"data": {"type": "teams", "attributes": {"name": "ops"}}})
    team_id = team.json()["data"]["id"]
    token = _expiry(env.api("POST", f"/teams/{team_id}/authentication-tokens", {"data": {"attributes": {}}}))
    assert now + timedelta(days=6) < token <= now + timedelta(days=7, minutes=1)
    asked = {"data": {"attributes": {"description": "x", "expired-at": later}}}
    assert _expiry(env.api("POST", f"/teams/{team_id}/authentication-tokens", asked)) < now + timedelta(days=4)


def test_bad_updates_are_422_and_only_managers_change_policies() -> None:
    env = make_run_env()
    for items in ((), (("robot", DAY_MS),), (("team", 0),), (("team", "1"),), (("team", DAY_MS), ("team", DAY_MS))):
        assert _update(env, *items).status_code == 422, items
    reader = member(env, "reader")
    assert call(env, reader, "GET", PATH).status_code == 200
    body = {"data": {"type": "organization-token-ttl-policies", "attributes": {
        "token-ttl-policies": [{"token-type": "team", "max-ttl-ms": DAY_MS}]}}}  # fmt: skip
    assert call(env, reader, "PATCH", PATH, body).status_code == 403
    assert env.api("GET", "/organizations/nope/token-ttl-policies").status_code == 404
