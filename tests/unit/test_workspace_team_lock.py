"""A workspace locked with a team token names its holder as a team (`is locked by Team …`, the words go-tfe maps
to ErrWorkspaceLockedByTeam; `locked-by` a team), and another caller's unlock is refused."""

from __future__ import annotations

from run_helpers import make_run_env


def test_a_lock_taken_with_a_team_token_is_held_by_the_team() -> None:
    env = make_run_env()
    team = env.api("POST", "/organizations/acme/teams", {"data": {"type": "teams", "attributes": {"name": "ops"}}})
    team_id = team.json()["data"]["id"]
    access = {"data": {"type": "team-workspaces", "attributes": {"access": "admin"}, "relationships": {
        "team": {"data": {"type": "teams", "id": team_id}},
        "workspace": {"data": {"type": "workspaces", "id": env.workspace_id}}}}}  # fmt: skip
    assert env.api("POST", "/team-workspaces", access).status_code == 201
    token = env.api("POST", f"/teams/{team_id}/authentication-token", {"data": {"type": "authentication-tokens"}})
    assert token.status_code == 201, token.text
    as_team = {**env.headers, "Authorization": f"Bearer {token.json()['data']['attributes']['token']}"}
    locked = env.client.post(f"/api/v2/workspaces/{env.workspace_id}/actions/lock", headers=as_team, json={})
    assert locked.status_code == 200, locked.text
    holder = locked.json()["data"]["relationships"]["locked-by"]["data"]
    assert holder == {"type": "teams", "id": team_id}

    refused = env.api("POST", f"/workspaces/{env.workspace_id}/actions/unlock")
    assert refused.status_code == 409 and "is locked by Team" in refused.text
    released = env.client.post(f"/api/v2/workspaces/{env.workspace_id}/actions/unlock", headers=as_team)
    assert released.status_code == 200, released.text
