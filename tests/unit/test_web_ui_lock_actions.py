"""The workspace page's lock button is the one the caller may use, as the Authorizer decides: a `write` member
locks and unlocks their own lock but is offered no force-unlock of someone else's (an `admin` level's right),
and a forged force-unlock changes nothing; the owner is offered it."""

from __future__ import annotations

from fastapi.testclient import TestClient
from run_helpers import RunEnv, make_run_env
from terrace.domain.principal import PrincipalKind
from terrace.web.app import create_app
from test_run_option_permissions import _as
from ui_helpers import sign_in, sign_in_token

PAGE = "/app/acme/workspaces/app"


def _writer(env: RunEnv) -> str:
    """A member whose team has `write` access to the workspace; returns their token."""
    team = env.api("POST", "/organizations/acme/teams", {"data": {"type": "teams", "attributes": {"name": "dev"}}})
    team_id = team.json()["data"]["id"]
    rel = {"team": {"data": {"type": "teams", "id": team_id}},
           "workspace": {"data": {"type": "workspaces", "id": env.workspace_id}}}  # fmt: skip
    body = {"data": {"type": "team-workspaces", "attributes": {"access": "write"}, "relationships": rel}}
    assert env.api("POST", "/team-workspaces", body).status_code == 201
    invite = {"data": {"type": "organization-memberships", "attributes": {"email": "wes@example.com"},
                       "relationships": {"teams": {"data": [{"type": "teams", "id": team_id}]}}}}  # fmt: skip
    member = env.api("POST", "/organizations/acme/organization-memberships", invite)
    user_id = member.json()["data"]["relationships"]["user"]["data"]["id"]
    token = env.container.accounts.issue_token(PrincipalKind.USER, user_id).secret
    assert _as(env, token, "POST", f"/organization-memberships/{member.json()['data']['id']}/actions/accept").is_success
    return token


def _browser(env: RunEnv, token: str) -> TestClient:
    client = TestClient(create_app(env.container), base_url="https://testserver", follow_redirects=False)
    assert sign_in(client, token).status_code == 303
    return client


def test_force_unlock_is_offered_only_to_those_allowed() -> None:
    env = make_run_env()
    writer = _browser(env, _writer(env))
    owner = _browser(env, env.headers["Authorization"].removeprefix("Bearer "))
    assert env.api("POST", f"/workspaces/{env.workspace_id}/actions/lock", {"reason": "owner's"}).status_code == 200

    page = writer.get(PAGE).text
    assert "Locked by alice" in page and "Force unlock" not in page and "Unlock workspace" not in page
    csrf = sign_in_token(page)
    forged = writer.post(f"{PAGE}/lock", data={"csrf_token": csrf, "action": "force-unlock"})
    assert forged.status_code == 404 and env.container.workspaces.load(env.workspace_id).lock is not None
    refused = writer.post(f"{PAGE}/lock", data={"csrf_token": csrf, "action": "unlock"})  # not theirs
    assert refused.status_code == 409 and 'role="alert"' in refused.text and "<h1>app</h1>" in refused.text

    own = owner.get(PAGE).text
    assert "Locked by you" in own and "Unlock workspace" in own and "Force unlock" not in own
    assert owner.post(f"{PAGE}/lock", data={"csrf_token": sign_in_token(own), "action": "unlock"}).status_code == 303
    assert writer.post(f"{PAGE}/lock", data={"csrf_token": csrf, "action": "lock"}).status_code == 303
    mine = writer.get(PAGE).text
    assert "Locked by you" in mine and "Unlock workspace" in mine

    theirs = owner.get(PAGE).text
    assert "Locked by wes" in theirs and "Force unlock" in theirs and "Unlock workspace" not in theirs
    done = owner.post(f"{PAGE}/lock", data={"csrf_token": sign_in_token(theirs), "action": "force-unlock"})
    assert done.status_code == 303 and env.container.workspaces.load(env.workspace_id).lock is None


def test_the_overview_shows_what_identifies_the_workspace_and_locks_with_a_reason() -> None:
    env = make_run_env()
    project = env.api(
        "POST", "/organizations/acme/projects", {"data": {"type": "projects", "attributes": {"name": "payments"}}}
    )
    assert project.status_code == 201, project.text
    in_project = {"project": {"data": {"type": "projects", "id": project.json()["data"]["id"]}}}
    body = {
        "data": {"type": "workspaces", "attributes": {"description": "The payments API"}, "relationships": in_project}
    }
    assert env.api("PATCH", f"/workspaces/{env.workspace_id}", body).status_code == 200
    tags = {"data": [{"type": "tags", "attributes": {"name": "team-pay"}}]}
    assert env.api("POST", f"/workspaces/{env.workspace_id}/relationships/tags", tags).status_code == 204
    owner = _browser(env, env.headers["Authorization"].removeprefix("Bearer "))
    page = owner.get(PAGE).text
    assert (
        f'<code id="ws-id">{env.workspace_id}</code>' in page and '<p id="ws-description">The payments API</p>' in page
    )
    assert ">payments</a></dd>" in page and 'href="/app/acme/workspaces?tag=team-pay">team-pay</a>' in page
    token = sign_in_token(page)
    locked = owner.post(f"{PAGE}/lock", data={"csrf_token": token, "action": "lock", "reason": "migrating the DB"})
    assert locked.status_code == 303
    assert "Locked by you (migrating the DB)" in owner.get(PAGE).text
