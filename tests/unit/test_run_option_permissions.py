"""What a run amounts to decides the permission it needs (`authz.run_action`): a run that applies without a
later confirmation is an apply. The options themselves are crossed with every access level in
`test_permission_matrix.py`; here: the rule itself, and the paths where no one asks again (the plan's end,
auto-queued uploads)."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from run_helpers import RunEnv, make_run_env, tarball
from terrace.domain.principal import PrincipalKind
from terrace.services.access.authz import Action, run_action


@pytest.mark.parametrize(("plan_only", "save_plan", "auto_apply"), list(itertools.product([False, True], repeat=3)))
def test_only_a_run_that_applies_by_itself_is_an_apply(plan_only: bool, save_plan: bool, auto_apply: bool) -> None:
    applies_by_itself = auto_apply and not plan_only and not save_plan
    want = Action.APPLY_RUN if applies_by_itself else Action.QUEUE_RUN
    assert run_action(plan_only=plan_only, save_plan=save_plan, auto_apply=auto_apply) is want


def _as(env: RunEnv, token: str, method: str, path: str, body: Any = None) -> Any:
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/vnd.api+json"}
    return env.client.request(method, f"/api/v2{path}", json=body, headers=headers)


def _planner(env: RunEnv) -> str:
    """A member whose one team has `plan` access to the workspace; returns their token."""
    team = env.api("POST", "/organizations/acme/teams", {"data": {"type": "teams", "attributes": {"name": "plan"}}})
    team_id = team.json()["data"]["id"]
    rel = {"team": {"data": {"type": "teams", "id": team_id}},
           "workspace": {"data": {"type": "workspaces", "id": env.workspace_id}}}  # fmt: skip
    body = {"data": {"type": "team-workspaces", "attributes": {"access": "plan"}, "relationships": rel}}
    assert env.api("POST", "/team-workspaces", body).status_code == 201
    invite = {"data": {"type": "organization-memberships", "attributes": {"email": "pat@example.com"},
                       "relationships": {"teams": {"data": [{"type": "teams", "id": team_id}]}}}}  # fmt: skip
    member = env.api("POST", "/organizations/acme/organization-memberships", invite)
    assert member.status_code == 201, member.text
    user_id = member.json()["data"]["relationships"]["user"]["data"]["id"]
    token = env.container.accounts.issue_token(PrincipalKind.USER, user_id).secret
    accept = _as(env, token, "POST", f"/organization-memberships/{member.json()['data']['id']}/actions/accept")
    assert accept.status_code == 200, accept.text
    return token


def _auto_apply_workspace(env: RunEnv) -> None:
    body = {"data": {"type": "workspaces", "attributes": {"auto-apply": True}}}
    assert env.api("PATCH", f"/workspaces/{env.workspace_id}", body).status_code == 200


def test_a_planners_run_on_an_auto_apply_workspace_waits_for_someone_who_may_apply() -> None:
    env = make_run_env()
    planner = _planner(env)
    _auto_apply_workspace(env)
    cv = env.upload_config()
    rel = {"workspace": {"data": {"type": "workspaces", "id": env.workspace_id}},
           "configuration-version": {"data": {"type": "configuration-versions", "id": cv}}}  # fmt: skip
    for attrs in ({"auto-apply": True}, {"is-destroy": True, "auto-apply": True}):
        body = {"data": {"type": "runs", "attributes": attrs, "relationships": rel}}
        refused = _as(env, planner, "POST", "/runs", body)
        assert refused.status_code == 403, refused.text
        assert refused.json()["errors"][0]["status"] == "403"
    assert env.api("GET", f"/workspaces/{env.workspace_id}/runs").json()["data"] == []  # nothing half-written
    created = _as(env, planner, "POST", "/runs", {"data": {"type": "runs", "attributes": {}, "relationships": rel}})
    assert created.status_code == 201, created.text
    run_id = created.json()["data"]["id"]
    env.work_next()  # the plan, with changes
    assert env.run(run_id)["attributes"]["status"] == "cost_estimated"  # awaits a confirmation
    assert env.queued() == []  # no apply was queued
    assert _as(env, planner, "POST", f"/runs/{run_id}/actions/apply", {}).status_code == 403
    assert env.api("POST", f"/runs/{run_id}/actions/apply", {}).status_code == 202  # an owner confirms


def test_an_upload_by_a_planner_queues_a_run_the_workspaces_auto_apply_does_not_apply() -> None:
    env = make_run_env()
    planner = _planner(env)
    _auto_apply_workspace(env)
    body = {"data": {"type": "configuration-versions", "attributes": {"auto-queue-runs": True}}}
    cv = _as(env, planner, "POST", f"/workspaces/{env.workspace_id}/configuration-versions", body).json()["data"]
    env.land(cv["attributes"]["upload-url"].split("memory://blobs/")[1].split("?")[0], tarball({"main.tf": ""}))
    runs = env.api("GET", f"/workspaces/{env.workspace_id}/runs").json()["data"]
    assert len(runs) == 1 and runs[0]["attributes"]["auto-apply"] is False
    env.work_next()
    assert env.run(runs[0]["id"])["attributes"]["status"] == "cost_estimated"
