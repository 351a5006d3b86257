"""What go-tfe v1.109's test helpers send and read on every team, team-access and team-token test: an
organization's stacks (listed in every cleanup; Stacks are not a Terrace feature, so none) and HCP's newest
organization-access key."""

from __future__ import annotations

from run_helpers import make_run_env
from terrace.domain.principal import PrincipalKind


def test_an_organization_lists_no_stacks_and_a_stranger_gets_404() -> None:
    env = make_run_env()
    response = env.api("GET", "/organizations/acme/stacks?page[size]=100")
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["data"] == []
    assert body["meta"]["pagination"]["total-count"] == 0
    stranger = env.container.accounts.create_user("mallory", "mallory@example.com")
    token = env.container.accounts.issue_token(PrincipalKind.USER, stranger.id).secret
    other = env.client.get("/api/v2/organizations/acme/stacks", headers={"Authorization": f"Bearer {token}"})
    assert other.status_code == 404


def test_a_team_takes_and_keeps_delegate_policy_overrides() -> None:
    env = make_run_env()
    access = {"delegate-policy-overrides": True, "manage-policies": False}
    body = {"data": {"type": "teams", "attributes": {"name": "reviewers", "organization-access": access}}}
    created = env.api("POST", "/organizations/acme/teams", body)
    assert created.status_code == 201, created.text
    team_id = created.json()["data"]["id"]
    read = env.api("GET", f"/teams/{team_id}").json()["data"]["attributes"]["organization-access"]
    assert read["delegate-policy-overrides"] is True
    unknown = {"data": {"type": "teams", "attributes": {"organization-access": {"manage-everything": True}}}}
    assert env.api("PATCH", f"/teams/{team_id}", unknown).status_code == 422
