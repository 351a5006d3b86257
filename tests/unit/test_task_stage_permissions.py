"""Who may manage run tasks, attach them and override a task stage: owners, teams with `manage-run-tasks` /
`manage-policy-overrides`; a team that only writes to the workspace may read both but change neither."""

from __future__ import annotations

from typing import Any

from run_helpers import RunEnv, join, make_run_env
from terrace.domain.principal import PrincipalKind
from terrace.services.runs.stage_participants import StageContext, Verdict


class NeedsOverride:
    kind = "policy-evaluations"

    def begin(self, context: StageContext) -> list[str]:
        return ["poleval-1"] if context.stage == "post_plan" else []

    def verdict(self, context: StageContext) -> Verdict:
        return "awaiting_override"

    def overridden(self, context: StageContext) -> None:
        pass


def member(env: RunEnv, name: str, access: str | None, **org_access: bool) -> str:
    """A member of a team with `org_access` and `access` to the workspace; their token."""
    user = env.container.accounts.create_user(name, f"{name}@example.com")
    token = env.container.accounts.issue_token(PrincipalKind.USER, user.id).secret
    join(env, token, name)
    team = env.api("POST", f"/organizations/{env.organization}/teams",
                   {"data": {"type": "teams", "attributes": {"name": f"team-{name}",
                    "organization-access": org_access}}}).json()["data"]  # fmt: skip
    assert env.api("POST", f"/teams/{team['id']}/relationships/users",
                   {"data": [{"type": "users", "id": name}]}).status_code == 204  # fmt: skip
    if access:
        rel = {"team": {"data": {"type": "teams", "id": team["id"]}},
               "workspace": {"data": {"type": "workspaces", "id": env.workspace_id}}}  # fmt: skip
        grant = {"data": {"type": "team-workspaces", "attributes": {"access": access}, "relationships": rel}}
        assert env.api("POST", "/team-workspaces", grant).status_code == 201
    return token


def call(env: RunEnv, token: str, method: str, path: str, body: Any = None) -> Any:
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/vnd.api+json"}
    return env.client.request(method, f"/api/v2{path}", json=body, headers=headers)


def test_managing_run_tasks_needs_manage_run_tasks() -> None:
    env = make_run_env()
    writer = member(env, "wendy", "write")
    manager = member(env, "mike", None, **{"manage-run-tasks": True})
    body = {"data": {"type": "tasks", "attributes": {"name": "c", "url": "https://c.example.com", "category": "task"}}}
    assert call(env, writer, "POST", f"/organizations/{env.organization}/tasks", body).status_code == 403
    created = call(env, manager, "POST", f"/organizations/{env.organization}/tasks", body)
    assert created.status_code == 201, created.text
    task_id = created.json()["data"]["id"]
    assert call(env, writer, "GET", f"/tasks/{task_id}").status_code == 200
    assert call(env, writer, "DELETE", f"/tasks/{task_id}").status_code == 403
    attach = {"data": {"type": "workspace-tasks", "attributes": {"enforcement-level": "advisory"},
              "relationships": {"task": {"data": {"type": "tasks", "id": task_id}}}}}  # fmt: skip
    assert call(env, writer, "POST", f"/workspaces/{env.workspace_id}/tasks", attach).status_code == 403
    admin = member(env, "ada", "admin")
    assert call(env, admin, "POST", f"/workspaces/{env.workspace_id}/tasks", attach).status_code == 201
    ws = call(env, admin, "GET", f"/workspaces/{env.workspace_id}").json()["data"]["attributes"]["permissions"]
    assert ws["can-manage-run-tasks"] is True
    org = call(env, manager, "GET", f"/organizations/{env.organization}").json()["data"]["attributes"]["permissions"]
    assert org["can-manage-run-tasks"] is True


def test_overriding_needs_manage_policy_overrides() -> None:
    env = make_run_env()
    env.take_part(NeedsOverride())
    writer = member(env, "wendy", "write")
    overrider = member(env, "olga", "read", **{"manage-policy-overrides": True})
    run = env.create_run(env.upload_config())
    env.work_next()
    [stage] = env.api("GET", f"/runs/{run['id']}/task-stages").json()["data"]
    env.container.stage_progress.advance(stage["id"])
    path = f"/task-stages/{stage['id']}/actions/override"
    shown = call(env, writer, "GET", f"/task-stages/{stage['id']}").json()["data"]["attributes"]
    assert shown["status"] == "awaiting_override" and shown["permissions"]["can-override"] is False
    assert call(env, writer, "POST", path, {}).status_code == 403
    assert call(env, overrider, "POST", path, {"comment": "x" * 5000}).status_code == 422
    done = call(env, overrider, "POST", path, {"comment": "accepted"})
    assert done.status_code == 200, done.text
    assert env.run(run["id"])["attributes"]["status"] == "post_plan_completed"
