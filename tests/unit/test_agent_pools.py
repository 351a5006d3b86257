"""Agent pools through the API (as go-tfe calls it): CRUD, allowed workspaces, tokens shown once and revocable, the
permissions (owners and `manage-agent-pools` teams change them, members read them, other organizations see nothing),
the workspace and organization bindings (422 for an absent or disallowing pool), and the scheduling rules: an agent
pool's run waits in its pool's queue, Terrace's runners and the scaler never take it, an agent never takes another
pool's or organization's job, and a job handed back is retried as a lost one."""

from __future__ import annotations

from typing import Any

from run_helpers import RunEnv, join, make_run_env
from terrace.adapters.definitions import LANE_PRIORITY
from terrace.adapters.memory_lanes import MemoryLanes
from terrace.domain.principal import PrincipalKind
from test_runner_tenancy import FakeLauncher


def _pool(env: RunEnv, name: str = "vpc", org: str = "acme", **extra: Any) -> dict[str, Any]:
    body = {"data": {"type": "agent-pools", "attributes": {"name": name}, **extra}}
    created = env.api("POST", f"/organizations/{org}/agent-pools", body)
    assert created.status_code == 201, created.text
    return dict(created.json()["data"])


def _token(env: RunEnv, pool_id: str) -> dict[str, Any]:
    body = {"data": {"type": "authentication-tokens", "attributes": {"description": "ci"}}}
    created = env.api("POST", f"/agent-pools/{pool_id}/authentication-tokens", body)
    assert created.status_code == 201, created.text
    return dict(created.json()["data"])


def _agent_mode(env: RunEnv, pool_id: str | None, ws: str | None = None) -> Any:
    body = {"data": {"type": "workspaces", "attributes": {"execution-mode": "agent", "agent-pool-id": pool_id}}}
    return env.api("PATCH", f"/workspaces/{ws or env.workspace_id}", body)


def _workspace(env: RunEnv) -> Any:
    owner = env.container.accounts.authenticate(env.headers["Authorization"].removeprefix("Bearer "))
    return env.container.workspaces.get(owner, env.workspace_id)


def _register(env: RunEnv, secret: str, name: str = "a") -> str:
    answer = env.client.post("/api/agent/register", json={"name": name}, headers={"Authorization": f"Bearer {secret}"})
    assert answer.status_code == 200, answer.text
    return str(answer.json()["agent_id"])


def test_pool_crud_tokens_and_agents() -> None:
    env = make_run_env()
    pool = _pool(env, relationships={"allowed-workspaces": {"data": [{"type": "workspaces", "id": env.workspace_id}]}})
    assert pool["id"].startswith("apool-") and pool["attributes"]["organization-scoped"] is True
    assert pool["relationships"]["allowed-workspaces"]["data"] == [{"type": "workspaces", "id": env.workspace_id}]
    assert env.api("GET", f"/agent-pools/{pool['id']}").json()["data"] == pool
    assert env.api("POST", "/organizations/acme/agent-pools", {"data": {"type": "agent-pools",
                   "attributes": {"name": "vpc"}}}).status_code == 422  # fmt: skip
    listed = env.api("GET", "/organizations/acme/agent-pools?q=vp").json()
    assert [p["id"] for p in listed["data"]] == [pool["id"]] and listed["meta"]["pagination"]["total-count"] == 1
    emptied = {"data": {"type": "agent-pools", "relationships": {"allowed-workspaces": {"data": []}}}}
    updated = env.api("PATCH", f"/agent-pools/{pool['id']}", emptied).json()["data"]
    assert updated["relationships"]["allowed-workspaces"]["data"] == [] and updated["attributes"]["name"] == "vpc"

    token = _token(env, pool["id"])
    secret = token["attributes"]["token"]
    assert secret and token["id"].startswith("at-")
    read = env.api("GET", f"/authentication-tokens/{token['id']}").json()["data"]
    assert read["attributes"]["token"] is None and read["attributes"]["description"] == "ci"
    agent_id = _register(env, secret, "laptop")
    (agent,) = env.api("GET", f"/agent-pools/{pool['id']}/agents").json()["data"]
    assert agent["id"] == agent_id and agent["attributes"]["status"] == "idle"
    assert agent["attributes"]["name"] == "laptop" and agent["attributes"]["last-ping-at"]
    assert env.api("GET", f"/agents/{agent_id}").json()["data"] == agent
    used = env.api("GET", f"/agent-pools/{pool['id']}/authentication-tokens").json()["data"]
    assert [t["id"] for t in used] == [token["id"]] and used[0]["attributes"]["last-used-at"]
    assert env.api("DELETE", f"/authentication-tokens/{token['id']}").status_code == 204
    assert _register_status(env, secret) == 401  # revoked
    assert env.api("DELETE", f"/agent-pools/{pool['id']}").status_code == 204
    assert env.api("GET", f"/agent-pools/{pool['id']}").status_code == 404


def _register_status(env: RunEnv, secret: str) -> int:
    headers = {"Authorization": f"Bearer {secret}"}
    return int(env.client.post("/api/agent/register", json={}, headers=headers).status_code)


def test_who_may_see_and_change_pools() -> None:
    env = make_run_env()
    pool = _pool(env)
    bob = env.container.accounts.create_user("bob")
    bob_token = env.container.accounts.issue_token(PrincipalKind.USER, bob.id).secret
    join(env, bob_token, "bob")
    bob_headers = {"Authorization": f"Bearer {bob_token}", "Content-Type": "application/vnd.api+json"}
    assert env.client.get(f"/api/v2/agent-pools/{pool['id']}", headers=bob_headers).status_code == 200
    rename = {"data": {"type": "agent-pools", "attributes": {"name": "mine"}}}
    assert env.client.patch(f"/api/v2/agent-pools/{pool['id']}", headers=bob_headers, json=rename).status_code == 403
    tokens = f"/api/v2/agent-pools/{pool['id']}/authentication-tokens"
    assert env.client.get(tokens, headers=bob_headers).status_code == 403
    # a stranger (another organization's owner) sees nothing, with the text of an absent pool
    mallory = env.container.accounts.create_user("mallory")
    evil = {"Authorization": f"Bearer {env.container.accounts.issue_token(PrincipalKind.USER, mallory.id).secret}"}
    hidden = env.client.get(f"/api/v2/agent-pools/{pool['id']}", headers=evil)
    absent = env.client.get("/api/v2/agent-pools/apool-absent", headers=env.headers)
    assert hidden.status_code == absent.status_code == 404
    assert hidden.json()["errors"][0]["detail"].replace(pool["id"], "X") == absent.json()["errors"][0][
        "detail"
    ].replace("apool-absent", "X")


def test_workspace_and_organization_bindings() -> None:
    env = make_run_env()
    assert _agent_mode(env, "apool-doesnotexist").status_code == 422
    assert _agent_mode(env, None).status_code == 422
    scoped = _pool(env, "only-some", attributes={"name": "only-some", "organization-scoped": False})
    refused = _agent_mode(env, scoped["id"])
    assert refused.status_code == 422 and "does not allow" in refused.text
    pool = _pool(env)
    accepted = _agent_mode(env, pool["id"])
    assert accepted.status_code == 200, accepted.text
    assert accepted.json()["data"]["relationships"]["agent-pool"]["data"]["id"] == pool["id"]
    assert env.api("DELETE", f"/agent-pools/{pool['id']}").status_code == 409  # in use
    remote = {"data": {"type": "workspaces", "attributes": {"execution-mode": "remote"}}}
    back = env.api("PATCH", f"/workspaces/{env.workspace_id}", remote).json()["data"]
    assert back["relationships"]["agent-pool"]["data"] is None  # leaving the agent mode leaves the pool
    not_agent = {"data": {"type": "organizations", "relationships": {
        "default-agent-pool": {"data": {"type": "agent-pools", "id": pool["id"]}}}}}  # fmt: skip
    refused = env.api("PATCH", "/organizations/acme", not_agent)
    assert refused.status_code == 422 and "unless using 'agent' execution mode" in refused.text
    not_agent["data"]["attributes"] = {"default-execution-mode": "agent"}
    org = env.api("PATCH", "/organizations/acme", not_agent).json()["data"]
    assert org["relationships"]["default-agent-pool"]["data"]["id"] == pool["id"]
    inherit = {"data": {"type": "workspaces", "attributes": {"setting-overwrites": {"execution-mode": False}}}}
    ws = env.api("PATCH", f"/workspaces/{env.workspace_id}", inherit).json()["data"]
    assert (
        ws["attributes"]["execution-mode"] == "agent" and ws["relationships"]["agent-pool"]["data"]["id"] == pool["id"]
    )
    org = env.api("PATCH", "/organizations/acme", {"data": {"type": "organizations", "attributes": {
        "default-execution-mode": "remote"}}}).json()["data"]  # fmt: skip
    assert org["relationships"]["default-agent-pool"]["data"] is None


def test_an_agent_pools_run_goes_to_its_agents_only() -> None:
    env = make_run_env()
    pool, other = _pool(env), _pool(env, "other")
    assert _agent_mode(env, pool["id"]).status_code == 200
    run = env.create_run(env.upload_config())
    assert env.queued() == []  # not in the organization's queue: Terrace's runners never see it
    launcher = FakeLauncher()  # nor does the scaler: a tick starts no runner and sends nothing on a lane
    env.container.launcher = env.container.scaler.launcher = launcher
    assert env.container.scaler.scale_once()["started"] == {} and launcher.runners == []
    assert isinstance(env.container.lanes, MemoryLanes)
    assert all(env.container.lanes.messages(lane) == [] for lane in LANE_PRIORITY)
    assert env.runner("POST", "/jobs/next", json={"runner_id": "r1"}).status_code == 204
    waiting = env.container.agent_waits.waiting_for(env.container.run_store.load(run["id"]))
    assert waiting == "waiting for an agent of pool vpc (no agent of it is connected)"
    panel = env.container.run_pages.waiting(_workspace(env), env.container.run_store.load(run["id"]))
    assert panel is not None and panel.executor == "an agent of pool vpc (no agent of it is connected)"
    other_secret = _token(env, other["id"])["attributes"]["token"]
    other_agent = _register(env, other_secret)
    assert env.runner("POST", "/jobs/next", json={"runner_id": other_agent}, token=other_secret).status_code == 204
    secret = _token(env, pool["id"])["attributes"]["token"]
    unregistered = env.runner("POST", "/jobs/next", json={"runner_id": "agent-nobody"}, token=secret)
    assert unregistered.status_code == 404
    agent = _register(env, secret, "vm")
    spec = env.claim(agent, token=secret)
    assert spec["run_id"] == run["id"] and spec["phase"] == "plan"
    (listed,) = env.api("GET", f"/agent-pools/{pool['id']}/agents").json()["data"]
    assert listed["attributes"]["status"] == "busy"
    # the job exists for its agent only: another pool's agent and the organization's runner get a 404
    beat = f"/jobs/{spec['job_id']}/heartbeat"
    assert env.runner("POST", beat, json={"runner_id": other_agent}, token=other_secret).status_code == 404
    assert env.runner("POST", beat, json={"runner_id": "r1"}).status_code == 404
    assert env.runner("POST", beat, json={"runner_id": agent}, token=secret).status_code == 200
    # handed back (the agent stops): queued again, in the pool's queue, attempt 2
    released = env.runner("POST", f"/jobs/{spec['job_id']}/release", json={"runner_id": agent}, token=secret)
    assert released.status_code == 200 and released.json() == {"run_status": "plan_queued"}
    stored = env.container.run_store.load(run["id"])
    assert stored.plan.attempt == 2 and stored.status == "plan_queued"
    assert env.container.job_queue.queued(f"acme#agent-pool#{pool['id']}")[0].attempt == 2
    exited = env.client.post(f"/api/agent/agents/{agent}/exit", headers={"Authorization": f"Bearer {secret}"})
    assert exited.status_code == 204
    assert env.api("GET", f"/agents/{agent}").json()["data"]["attributes"]["status"] == "exited"


def test_a_run_of_another_organizations_pool_is_never_offered() -> None:
    env = make_run_env()
    pool = _pool(env)
    assert _agent_mode(env, pool["id"]).status_code == 200
    env.create_run(env.upload_config())
    env.api("POST", "/organizations", {"data": {"type": "organizations", "attributes": {"name": "globex",
            "email": "g@example.com"}}})  # fmt: skip
    theirs = _pool(env, "vpc", org="globex")
    secret = _token(env, theirs["id"])["attributes"]["token"]
    agent = _register(env, secret)
    assert env.runner("POST", "/jobs/next", json={"runner_id": agent}, token=secret).status_code == 204
    # their token is an agent's only: it reads nothing of the API
    assert env.client.get("/api/v2/organizations/globex/workspaces",
                          headers={"Authorization": f"Bearer {secret}"}).status_code in (403, 404)  # fmt: skip
    # deleting the organization deletes its pools and revokes their tokens
    assert env.api("DELETE", "/organizations/globex").status_code == 204
    assert _register_status(env, secret) == 401
    assert env.api("GET", f"/agent-pools/{theirs['id']}").status_code == 404


def test_the_reaper_treats_an_agents_jobs_as_a_runners() -> None:
    env = make_run_env(job_heartbeat_timeout_s=0, queued_deadline_s=-1, queued_resend_s=-1)
    pool = _pool(env)
    assert _agent_mode(env, pool["id"]).status_code == 200
    run = env.create_run(env.upload_config())
    queue = f"acme#agent-pool#{pool['id']}"
    assert env.container.job_queue.take(queue) is not None  # taken, then lost before its claim
    summary = env.container.reaper.reap_once()
    assert summary.get("errored", 0) == 0 and summary["resent"] == 1  # it waits for an agent: re-indexed, no deadline
    assert [q.attempt for q in env.container.job_queue.queued(queue)] == [1] and env.queued() == []
    secret = _token(env, pool["id"])["attributes"]["token"]
    agent = _register(env, secret)
    spec = env.claim(agent, token=secret)
    assert env.container.reaper.reap_once()["retried"] == 1  # its agent stopped heartbeating: retried, in its pool
    assert env.run(run["id"])["attributes"]["status"] == "plan_queued"
    assert [q.attempt for q in env.container.job_queue.queued(queue)] == [2] and env.queued() == []
    late = env.runner("POST", f"/jobs/{spec['job_id']}/finish", json={"runner_id": agent, "status": "finished"},
                      token=secret)  # fmt: skip
    assert late.status_code == 409


def _write_state(env: RunEnv, token: str, serial: int) -> int:
    import base64
    import hashlib
    import json

    state = json.dumps({"version": 4, "serial": serial, "lineage": "l-1", "outputs": {}, "resources": []}).encode()
    attributes = {"serial": serial, "md5": hashlib.md5(state).hexdigest(), "lineage": "l-1",
                  "state": base64.b64encode(state).decode()}  # fmt: skip
    body = {"data": {"type": "state-versions", "attributes": attributes}}
    headers = {"Authorization": f"Bearer {token}"}
    answer = env.client.post(f"/api/v2/workspaces/{env.workspace_id}/state-versions", json=body, headers=headers)
    return int(answer.status_code)


def test_revoking_an_agent_token_revokes_the_run_tokens_of_the_jobs_it_claimed() -> None:
    env = make_run_env()
    pool = _pool(env)
    assert _agent_mode(env, pool["id"]).status_code == 200
    run = env.create_run(env.upload_config())
    token = _token(env, pool["id"])
    secret = token["attributes"]["token"]
    spec = env.claim(_register(env, secret, "vm"), token=secret)
    assert _write_state(env, spec["run_token"], 1) == 201  # the job writes state while it runs
    assert env.api("DELETE", f"/authentication-tokens/{token['id']}").status_code == 204
    assert _write_state(env, spec["run_token"], 2) == 401  # its run token died with the agent token
    stored = env.container.run_store.load(run["id"])
    assert stored.status == "plan_queued" and stored.plan.attempt == 2  # the attempt is lost: another agent takes it
    assert env.container.job_queue.queued(f"acme#agent-pool#{pool['id']}")[0].attempt == 2  # in the pool's queue


def test_excluded_workspaces_never_use_the_pool_and_pools_sort_by_creation() -> None:
    env = make_run_env()
    ws = {"data": [{"type": "workspaces", "id": env.workspace_id}]}
    pool = _pool(env, "scoped", relationships={"excluded-workspaces": ws})
    assert pool["relationships"]["excluded-workspaces"]["data"] == ws["data"]
    refused = _agent_mode(env, pool["id"])  # organization-scoped, but this workspace is excluded
    assert refused.status_code == 422 and "does not allow" in refused.text
    renamed = {"data": {"type": "agent-pools", "attributes": {"name": "scoped-2"}}}
    kept = env.api("PATCH", f"/agent-pools/{pool['id']}", renamed).json()["data"]
    assert kept["relationships"]["excluded-workspaces"]["data"] == ws["data"]  # unchanged unless sent
    emptied = {"data": {"type": "agent-pools", "relationships": {"excluded-workspaces": {"data": []}}}}
    assert env.api("PATCH", f"/agent-pools/{pool['id']}", emptied).status_code == 200
    assert _agent_mode(env, pool["id"]).status_code == 200
    unknown = {"data": [{"type": "workspaces", "id": "ws-doesnotexist0000"}]}
    assert env.api("POST", "/organizations/acme/agent-pools", {"data": {"type": "agent-pools", "attributes": {
        "name": "other"}, "relationships": {"excluded-workspaces": unknown}}}).status_code == 404  # fmt: skip

    second = _pool(env, "second")
    oldest = [p["id"] for p in env.api("GET", "/organizations/acme/agent-pools?sort=created-at").json()["data"]]
    newest = [p["id"] for p in env.api("GET", "/organizations/acme/agent-pools?sort=-created-at").json()["data"]]
    assert oldest == [pool["id"], second["id"]] and newest == [second["id"], pool["id"]]


def test_an_agent_token_names_its_creator() -> None:
    """`created-by` (go-tfe v1.109's TestAgentTokensReadCreatedBy): the user who created it, or an organization (by
    its name) when its organization token did, on the creation's answer, the read and the list alike."""
    env = make_run_env()
    pool = _pool(env)
    user_id = env.api("GET", "/account/details").json()["data"]["id"]
    by_user = _token(env, pool["id"])
    assert by_user["relationships"]["created-by"]["data"] == {"type": "users", "id": user_id}
    read = env.api("GET", f"/authentication-tokens/{by_user['id']}").json()["data"]
    assert read["relationships"]["created-by"]["data"] == {"type": "users", "id": user_id}

    org_token = env.api("POST", "/organizations/acme/authentication-token", {"data": {"type": "authentication-token"}})
    assert org_token.status_code == 201, org_token.text
    headers = {**env.headers, "Authorization": f"Bearer {org_token.json()['data']['attributes']['token']}"}
    body = {"data": {"type": "authentication-tokens", "attributes": {"description": "by the organization"}}}
    created = env.client.post(f"/api/v2/agent-pools/{pool['id']}/authentication-tokens", json=body, headers=headers)
    assert created.status_code == 201, created.text
    assert created.json()["data"]["relationships"]["created-by"]["data"] == {"type": "organizations", "id": "acme"}
    listed = env.api("GET", f"/agent-pools/{pool['id']}/authentication-tokens").json()["data"]
    assert {t["id"]: t["relationships"]["created-by"]["data"]["type"] for t in listed} == {
        by_user["id"]: "users",
        created.json()["data"]["id"]: "organizations",
    }
