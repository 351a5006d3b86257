"""Reads never write, for configuration versions too: an archive that landed makes its version `uploaded` (or
`errored`) through the landing (the `blob.landed` event: S3's notification through the events worker, the
embedded blob server's PUT) or a run's creation from it, never through a GET or a list. (On moto:
`tests/integration/test_config_landed_on_moto.py`.)"""

from __future__ import annotations

import pytest
from run_helpers import tarball
from state_helpers import Env
from terrace.services.events import landed_event
from test_state_reads_never_write import _path, embedded, spy_writes

__all__ = ["embedded"]  # the embedded server's fixture


def _remote(env: Env) -> None:
    """The fixture's workspace runs remotely: a local-execution workspace queues no run (RunService.create)."""
    body = {"data": {"type": "workspaces", "attributes": {"execution-mode": "remote"}}}
    assert env.client.patch(f"/api/v2/workspaces/{env.ws_id}", headers=env.auth, json=body).status_code == 200


def _create(env: Env, auto_queue: bool = False) -> dict:
    body = {"data": {"type": "configuration-versions", "attributes": {"auto-queue-runs": auto_queue}}}
    got = env.client.post(f"/api/v2/workspaces/{env.ws_id}/configuration-versions", headers=env.auth, json=body)
    assert got.status_code == 201, got.text
    return dict(got.json()["data"])


def _reads(env: Env, cv_id: str) -> tuple[str, str]:
    one = env.client.get(f"/api/v2/configuration-versions/{cv_id}", headers=env.auth)
    listed = env.client.get(f"/api/v2/workspaces/{env.ws_id}/configuration-versions", headers=env.auth)
    assert one.status_code == 200 and listed.status_code == 200
    return one.json()["data"]["attributes"]["status"], listed.json()["data"][0]["attributes"]["status"]


def _runs(env: Env) -> list:
    got = env.client.get(f"/api/v2/workspaces/{env.ws_id}/runs", headers=env.auth)
    return list(got.json()["data"])


def test_a_landed_archive_reads_pending_without_a_write_until_its_event(
    state_env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = state_env
    _remote(env)
    cv = _create(env, auto_queue=True)
    key = f"config/{env.ws_id}/{cv['id']}.tar.gz"
    env.container.blobs.put(key, tarball({"main.tf": ""}))  # landed; its event not handled yet
    writes = spy_writes(env, monkeypatch)
    assert _reads(env, cv["id"]) == ("pending", "pending")
    assert writes == [] and _runs(env) == []  # no write, no run auto-queued by a read
    monkeypatch.undo()

    env.container.events.handle(landed_event(key))
    assert _reads(env, cv["id"]) == ("uploaded", "uploaded")
    assert len(_runs(env)) == 1  # auto-queue-runs: the landing queued it, once
    env.container.events.handle(landed_event(key))  # a repeated landing changes nothing
    assert _reads(env, cv["id"]) == ("uploaded", "uploaded") and len(_runs(env)) == 1


def test_a_too_large_archive_errors_on_its_landing(state_env: Env) -> None:
    env = state_env
    cv = _create(env)
    key = f"config/{env.ws_id}/{cv['id']}.tar.gz"
    env.container.blobs.put(key, b"x" * (env.container.settings.max_config_bytes + 1))
    env.container.events.handle(landed_event(key))
    assert _reads(env, cv["id"]) == ("errored", "errored")
    assert env.container.blobs.head(key) is None


def test_a_run_created_from_a_landed_version_finalizes_it(state_env: Env) -> None:
    """The landing event lost or not delivered yet: the run's creation (a write) finalizes the version."""
    env = state_env
    _remote(env)
    cv = _create(env)
    env.container.blobs.put(f"config/{env.ws_id}/{cv['id']}.tar.gz", tarball({"main.tf": ""}))
    body = {
        "data": {
            "type": "runs",
            "relationships": {
                "workspace": {"data": {"type": "workspaces", "id": env.ws_id}},
                "configuration-version": {"data": {"type": "configuration-versions", "id": cv["id"]}},
            },
        }
    }
    created = env.client.post("/api/v2/runs", headers=env.auth, json=body)
    assert created.status_code == 201, created.text
    assert _reads(env, cv["id"]) == ("uploaded", "uploaded")


def test_a_landing_on_a_sealed_version_changes_nothing(state_env: Env) -> None:
    env = state_env
    cv = _create(env)
    key = f"config/{env.ws_id}/{cv['id']}.tar.gz"
    env.container.blobs.put(key, tarball({"main.tf": ""}))
    env.container.events.handle(landed_event(key))
    env.container.configuration_versions.seal(env.container.configuration_versions.load(cv["id"]))
    sealed = env.container.table.get(cv["id"], "cv")
    env.container.blobs.put(key, tarball({"main.tf": "# other"}))
    env.container.events.handle(landed_event(key))
    assert env.container.table.get(cv["id"], "cv") == sealed


def test_the_embedded_servers_put_finalizes_and_reads_write_nothing(
    embedded: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = embedded
    cv = _create(env)
    put = env.client.put(_path(cv["attributes"]["upload-url"]), content=tarball({"main.tf": ""}))
    assert put.status_code == 200
    writes = spy_writes(env, monkeypatch)
    assert _reads(env, cv["id"]) == ("uploaded", "uploaded")  # finalized by the PUT, before any read
    assert writes == []
