"""The wrapped data keys of a Hold Your Own Key workspace on the server: a state version's data key is recorded in
the transaction that stores the version, or not at all (a refused write leaves none behind)."""

from __future__ import annotations

import pytest
from hyok_helpers import enable_hyok, make_hyok_env, upload
from run_helpers import RunEnv


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
