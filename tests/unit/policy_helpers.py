"""Policy as code through the API of a memory container (`run_helpers.make_run_env`)."""

from __future__ import annotations

import json
from typing import Any

from run_helpers import RunEnv, join
from terrace.adapters.memory_events import MemoryEventPublisher
from terrace.domain.principal import PrincipalKind

DENY_NULL = """package terraform.policies.no_null
import rego.v1

deny contains msg if {
    some rc in input.plan.resource_changes
    rc.type == "null_resource"
    msg := sprintf("%s is a null_resource (workspace %s)", [rc.address, input.run.workspace.name])
}
"""


def call(env: RunEnv, token: str, method: str, path: str, body: Any = None, **kwargs: Any) -> Any:
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/vnd.api+json"}
    return env.client.request(method, f"/api/v2{path}", json=body, headers=headers, **kwargs)


def member(env: RunEnv, name: str, **org_access: bool) -> str:
    """A member of acme in a team holding `org_access`; returns their token."""
    user = env.container.accounts.create_user(name, f"{name}@example.com")
    token = env.container.accounts.issue_token(PrincipalKind.USER, user.id).secret
    join(env, token, name)
    team = env.api("POST", "/organizations/acme/teams", {"data": {"type": "teams", "attributes": {
        "name": f"team-{name}", "organization-access": org_access}}}).json()["data"]  # fmt: skip
    added = env.api("POST", f"/teams/{team['id']}/relationships/users", {"data": [{"type": "users", "id": name}]})
    assert added.status_code == 204, added.text
    return str(token)


def create_policy(env: RunEnv, name: str, level: str = "mandatory", rego: str | None = DENY_NULL, **attrs: Any) -> str:
    body = {"data": {"type": "policies", "attributes": {
        "name": name, "kind": "opa", "query": f"data.terraform.policies.{name}.deny", "enforcement-level": level,
        **attrs}}}  # fmt: skip
    created = env.api("POST", "/organizations/acme/policies", body)
    assert created.status_code == 201, created.text
    policy_id = str(created.json()["data"]["id"])
    if rego is not None:
        text = rego.replace("terraform.policies.no_null", f"terraform.policies.{name}")
        uploaded = env.client.put(f"/api/v2/policies/{policy_id}/upload", content=text.encode(), headers=env.headers)
        assert uploaded.status_code == 200, uploaded.text
    return policy_id


def create_set(env: RunEnv, name: str, *, kind: str = "opa", policies: tuple[str, ...] = (),
               workspaces: tuple[str, ...] = (), **attrs: Any) -> dict[str, Any]:  # fmt: skip
    relationships = {
        "policies": {"data": [{"type": "policies", "id": p} for p in policies]},
        "workspaces": {"data": [{"type": "workspaces", "id": w} for w in workspaces]},
    }
    body = {"data": {"type": "policy-sets", "attributes": {"name": name, "kind": kind, **attrs},
                     "relationships": relationships}}  # fmt: skip
    created = env.api("POST", "/organizations/acme/policy-sets", body)
    assert created.status_code == 201, created.text
    return dict(created.json()["data"])


def plan_run(env: RunEnv, *types: str, handle: bool = True) -> dict[str, Any]:
    """A run whose plan (by the scripted runner) proposes creating one resource of each type; the events worker then
    handles what was published (the policy evaluation, the stage's progress) unless `handle` is False. Returns the
    run."""
    run = env.create_run(env.upload_config())
    spec = env.claim()
    changes = [{"address": f"{t}.r{i}", "type": t, "change": {"actions": ["create"]}} for i, t in enumerate(types)]
    key = spec["plan_json_upload_url"].split("memory://blobs/")[1].split("?")[0]
    env.blobs.put(key, json.dumps({"format_version": "1.2", "resource_changes": changes}).encode())
    assert env.runner("PUT", f"/jobs/{spec['job_id']}/logs?offset=0", content=b"planned\n").status_code == 204
    finish = {"runner_id": "r1", "status": "finished", "has_changes": True, "resource_additions": len(types)}
    assert env.runner("POST", f"/jobs/{spec['job_id']}/finish", json=finish).status_code == 200
    if handle:
        deliver(env)
    return run


def deliver(env: RunEnv) -> None:
    """The events worker: every published event to its subscriptions, until none is left."""
    publisher = env.container.publisher
    assert isinstance(publisher, MemoryEventPublisher)
    while publisher.events:
        pending, publisher.events[:] = list(publisher.events), []
        for event in pending:
            env.container.events.handle(event)
