"""The wrapped data keys of a Hold Your Own Key workspace on the server: a state version's data key is recorded in
the transaction that stores the version, or not at all (a refused write leaves none behind); a sealed plan's data
key is recorded on its plan (`hyok-encrypted-data-key`, the `sanitized-plan` link), and revoking its customer key
version stops the apply: the applying agent is refused the key with the reason."""

from __future__ import annotations

import pytest
from hyok_helpers import KEK, enable_hyok, make_hyok_env, upload
from run_helpers import RunEnv
from terrace.adapters.key_wrapper import CustomerKey
from terrace.runner import hyok_envelope as envelope


@pytest.fixture(scope="module")
def env() -> RunEnv:
    env = make_hyok_env("hyokkeys")
    enable_hyok(env, env.workspace_id)
    return env


def _data_keys(env: RunEnv) -> set[str]:
    store = env.container.hyok_store
    (hyok,) = store.hyoks_of(env.container.organizations.lookup(env.organization).key)
    return {d.id for k in store.key_versions_of(hyok.id) for d in store.data_keys_of(k.id)}


def test_a_refused_state_write_leaves_no_data_key_behind(env: RunEnv) -> None:
    assert env.api("POST", f"/workspaces/{env.workspace_id}/actions/lock", {}).status_code == 200
    before = _data_keys(env)
    stored = upload(env, 5)
    assert stored.status_code == 201, stored.text
    kept = stored.json()["data"]["relationships"]["hyok-encrypted-data-key"]["data"]["id"]
    assert _data_keys(env) == before | {kept}
    backwards = upload(env, 4)  # a lower serial: refused
    assert backwards.status_code == 409, backwards.text
    assert _data_keys(env) == before | {kept}
    assert env.api("POST", f"/workspaces/{env.workspace_id}/actions/unlock", {}).status_code == 200
    # the workspace names the data key of its current state (go-tfe reads `hyok-data-key-for-encryption`)
    relationships = env.api("GET", f"/workspaces/{env.workspace_id}").json()["data"]["relationships"]
    assert relationships["hyok-data-key-for-encryption"]["data"]["id"] == kept
    assert relationships["hyok-encrypted-data-key"]["data"]["id"] == kept


def test_an_organization_names_its_primary_hyok_configuration(env: RunEnv) -> None:
    (hyok,) = env.container.hyok_store.hyoks_of(env.container.organizations.lookup(env.organization).key)
    org = env.api("GET", f"/organizations/{env.organization}").json()["data"]
    assert org["relationships"]["primary-hyok-configuration"]["data"] == {"type": "hyok-configurations", "id": hyok.id}


@pytest.fixture(scope="module")
def plans() -> RunEnv:
    env = make_hyok_env("hyokplans")
    enable_hyok(env, env.workspace_id)
    return env


def _agent(env: RunEnv) -> tuple[str, str]:
    """A registered agent of the HYOK configuration's pool: its token and id."""
    (hyok,) = env.container.hyok_store.hyoks_of(env.container.organizations.lookup(env.organization).key)
    body = {"data": {"type": "authentication-tokens", "attributes": {"description": "hyok"}}}
    secret = env.api("POST", f"/agent-pools/{hyok.agent_pool_id}/authentication-tokens", body).json()["data"]
    secret = secret["attributes"]["token"]
    registered = env.client.post(
        "/api/agent/register", json={"name": "vm"}, headers={"Authorization": f"Bearer {secret}"}
    )
    return secret, str(registered.json()["agent_id"])


def test_revoking_the_key_version_of_a_sealed_plan_stops_its_apply(plans: RunEnv) -> None:
    env = plans
    secret, agent = _agent(env)
    run = env.create_run(env.upload_config())
    spec = env.claim(agent, token=secret)
    assert spec["phase"] == "plan" and spec["hyok"] is True
    job = f"/jobs/{spec['job_id']}"
    key = env.runner("POST", f"{job}/hyok-key", json={"runner_id": agent}, token=secret)
    assert key.status_code == 200, key.text
    context = {**key.json()["context"], "purpose": "plan", "run": run["id"]}
    data_key = envelope.new_data_key(env.container.key_wrapper, CustomerKey(KEK, "aws"), context)
    record = {"runner_id": agent, "encrypted_dek": data_key.wrapped, "key_version": data_key.key_version}
    elsewhere = env.runner("POST", f"{job}/hyok-plan-key", token=secret,
                           json={**record, "context": {**context, "run": "run-other"}})  # fmt: skip
    assert elsewhere.status_code == 422, elsewhere.text
    first = env.runner("POST", f"{job}/hyok-plan-key", json={**record, "context": context}, token=secret)
    assert first.status_code == 200, first.text
    recorded = env.runner("POST", f"{job}/hyok-plan-key", json={**record, "context": context}, token=secret)
    assert recorded.status_code == 200, recorded.text  # sealed again (a retried attempt): the earlier key goes
    data_key_id = recorded.json()["data_key_id"]
    assert env.container.hyok_store.data_key(first.json()["data_key_id"]) is None

    plan = env.api("GET", f"/runs/{run['id']}/plan").json()["data"]
    assert plan["relationships"]["hyok-encrypted-data-key"]["data"]["id"] == data_key_id
    assert plan["links"]["sanitized-plan"] == f"/api/v2/plans/{plan['id']}/sanitized-plan"
    shown = env.api("GET", f"/hyok-encrypted-data-keys/{data_key_id}").json()["data"]["attributes"]
    assert shown["encrypted-dek"] == data_key.wrapped

    finish = {"runner_id": agent, "status": "finished", "has_changes": True, "resource_additions": 1}
    done = env.runner("POST", f"{job}/finish", token=secret, json=finish)
    assert done.status_code == 200, done.text
    json_key = env.container.run_store.load(run["id"]).plan.json_key
    assert json_key is not None
    env.container.blobs.put(json_key, b'{"resource_changes": []}', "application/json")  # the agent's sanitized JSON
    sanitized = env.api("GET", f"/plans/{plan['id']}/sanitized-plan", follow_redirects=False)
    assert sanitized.status_code == 307, sanitized.text
    assert env.api("POST", f"/runs/{run['id']}/actions/apply", {}).status_code == 202
    apply = env.claim(agent, token=secret)
    assert apply["phase"] == "apply"
    handed = env.runner("POST", f"/jobs/{apply['job_id']}/hyok-key", json={"runner_id": agent}, token=secret)
    assert handed.status_code == 200 and handed.json()["plan"]["encrypted_dek"] == data_key.wrapped

    found = env.container.hyok_store.data_key(data_key_id)
    assert found is not None
    assert env.api("POST", f"/hyok-customer-key-versions/{found.key_version_id}/actions/revoke").status_code == 202
    refused = env.runner("POST", f"/jobs/{apply['job_id']}/hyok-key", json={"runner_id": agent}, token=secret)
    assert refused.status_code == 409, refused.text
    assert "this plan was encrypted with data key" in refused.json()["errors"][0]["detail"]
    assert "revoked" in refused.json()["errors"][0]["detail"]
