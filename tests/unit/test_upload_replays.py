"""Upload URLs are single-use and what was recorded is what is served (the embedded server's blob URLs, over the app):
a second PUT to a state version's, a configuration version's or a plan's upload URL is refused (409) once its object
exists (a module version's link uploads again, as HCP Terraform's does), and the state, the plan JSON and the plan
an apply gets are the ones recorded. Where the store could still be written behind the record's back (S3 without a
conditional header: simulated here by writing the memory twin directly), reads refuse (409) instead of serving
another body."""

from __future__ import annotations

import gzip
import hashlib
import io
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from run_helpers import RunEnv, make_run_env
from state_helpers import Env, blob_url_path, embedded_env, md5, state_bytes
from terrace.domain.jobs import JobSpec
from terrace.runner.job_setup import JobFailed


def _tarball(text: str) -> bytes:
    """The same bytes for the same text (gzip's header time is fixed: a second boundary never changes them)."""
    buffer = io.BytesIO()
    with gzip.GzipFile(fileobj=buffer, mode="wb", mtime=0) as zipped, tarfile.open(fileobj=zipped, mode="w") as tar:
        data = text.encode()
        info = tarfile.TarInfo("main.tf")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


_path = blob_url_path


@pytest.fixture
def embedded(tmp_path: Path) -> Iterator[Env]:
    with embedded_env(tmp_path / "data", "remote", url_signing_secret="replay-secret", force_cancel_cooloff_s=0) as env:
        yield env


def test_a_state_upload_url_replayed_after_finalization_is_refused(embedded: Env) -> None:
    env = embedded
    env.lock()
    raw = state_bytes(1)
    created = env.push(None, 1, md5_hex=md5(raw))
    assert created.status_code == 201, created.text
    sv = created.json()["data"]
    url = _path(sv["attributes"]["hosted-state-upload-url"])
    assert env.client.put(url, content=raw).status_code == 200
    read = env.client.get(f"/api/v2/state-versions/{sv['id']}", headers=env.auth).json()["data"]["attributes"]
    assert read["status"] == "finalized"
    assert env.client.post(f"/api/v2/workspaces/{env.ws_id}/actions/unlock", headers=env.auth).status_code == 200

    forged = state_bytes(1, outputs={"x": {"value": "forged", "type": "string"}})
    replay = env.client.put(url, content=forged)
    assert replay.status_code == 409, replay.text
    assert replay.json()["errors"][0]["status"] == "409"
    download = env.client.get(f"/api/v2/state-versions/{sv['id']}/download", headers=env.auth)
    assert download.status_code == 200 and hashlib.md5(download.content).hexdigest() == md5(raw)
    assert list((Path(env.container.blobs.root) / "tmp").iterdir()) == []  # type: ignore[attr-defined]


def test_a_configuration_upload_url_uploads_again_only_until_a_run_is_created_from_it(embedded: Env) -> None:
    """As HCP Terraform's (go-tfe's `TestConfigurationVersionsUploadTarGzip` uploads twice to one URL), until a run
    is created from the version: then its archive is final, and a replayed PUT is refused."""
    env = embedded
    body = {"data": {"type": "configuration-versions", "attributes": {"auto-queue-runs": False}}}
    cv = env.client.post(f"/api/v2/workspaces/{env.ws_id}/configuration-versions", json=body, headers=env.auth)
    assert cv.status_code == 201, cv.text
    cv_id, url = cv.json()["data"]["id"], _path(cv.json()["data"]["attributes"]["upload-url"])
    first, second = _tarball('output "x" { value = 1 }'), _tarball('output "x" { value = 2 }')
    assert env.client.put(url, content=first).status_code == 200
    assert env.client.put(url, content=second).status_code == 200  # no run yet: the last upload counts
    download = env.client.get(f"/api/v2/configuration-versions/{cv_id}/download", headers=env.auth)
    assert download.status_code == 200 and download.content == second

    run_body = {
        "data": {
            "type": "runs",
            "relationships": {
                "workspace": {"data": {"type": "workspaces", "id": env.ws_id}},
                "configuration-version": {"data": {"type": "configuration-versions", "id": cv_id}},
            },
        }
    }
    assert env.client.post("/api/v2/runs", json=run_body, headers=env.auth).status_code == 201
    replay = env.client.put(url, content=_tarball('output "x" { value = "forged" }'))
    assert replay.status_code == 409, replay.text
    download = env.client.get(f"/api/v2/configuration-versions/{cv_id}/download", headers=env.auth)
    assert download.status_code == 200 and download.content == second
    runner = {"Authorization": f"Bearer {env.container.runner_credentials.runner_token('acme')}"}
    spec = JobSpec.model_validate(
        env.client.post("/api/runner/jobs/next", json={"runner_id": "r1"}, headers=runner).json()
    )
    assert spec.configuration_md5 == hashlib.md5(second).hexdigest()


def test_a_module_version_upload_link_is_an_object_link_and_uploads_again(embedded: Env) -> None:
    """As HCP Terraform's (go-tfe's `TestRegistryModulesCreateVersion` checks the link has `/object/`,
    `TestRegistryModulesUploadTarGzip` uploads twice to one link): each upload lands and the version is what the
    last one holds; the same object landing again changes nothing."""
    env = embedded
    module = {"data": {"type": "registry-modules", "attributes": {"name": "vpc", "provider": "aws"}}}
    made = env.client.post("/api/v2/organizations/acme/registry-modules", json=module, headers=env.auth)
    assert made.status_code == 201, made.text
    body = {"data": {"type": "registry-module-versions", "attributes": {"version": "1.0.0"}}}
    created = env.client.post("/api/v2/registry-modules/acme/vpc/aws/versions", json=body, headers=env.auth)
    assert created.status_code == 201, created.text
    link = created.json()["data"]["links"]["upload"]
    assert "/object/" in link
    url = _path(link)
    first, second = _tarball('output "x" { value = 1 }'), _tarball('output "x" { value = 2 }')
    assert env.client.put(url, content=first).status_code == 200
    assert env.client.put(url, content=second).status_code == 200, "a second upload through the link"
    versions = env.container.module_versions
    (version,) = versions.of_module(created.json()["data"]["relationships"]["registry-module"]["data"]["id"])
    assert (version.status, version.md5) == ("ok", hashlib.md5(second).hexdigest())
    assert versions.landed(version.blob_key) is None  # the same object again: nothing to read
    download = env.client.get("/api/registry/v1/modules/acme/vpc/aws/1.0.0/download", headers=env.auth)
    assert download.status_code == 204
    got = env.client.get(_path(download.headers["X-Terraform-Get"]))
    assert got.status_code == 200 and got.content == second


def test_a_sealed_configuration_replaced_behind_its_record_is_neither_served_nor_run() -> None:
    """Where the store cannot refuse a replayed PUT (S3 without If-None-Match, here the memory store), the record
    taken when the first run was created decides: the download is refused and the job spec names the recorded MD5
    (the runner refuses another archive: `test_runner_job`)."""
    env = make_run_env()
    cv_id = env.upload_config()
    cv = env.container.configuration_versions.load(cv_id)
    assert not cv.sealed
    assert env.api("GET", f"/configuration-versions/{cv_id}/download", follow_redirects=False).is_redirect
    env.create_run(cv_id)
    cv = env.container.configuration_versions.load(cv_id)
    assert cv.sealed and cv.md5
    env.blobs.put(cv.blob_key, _tarball('output "x" { value = "forged" }'))
    download = env.api("GET", f"/configuration-versions/{cv_id}/download", follow_redirects=False)
    assert download.status_code == 409, download.text
    assert env.claim()["configuration_md5"] == cv.md5


def test_a_plans_upload_urls_create_once_and_the_apply_gets_the_recorded_plan(embedded: Env) -> None:
    env = embedded
    body = {"data": {"type": "configuration-versions", "attributes": {"auto-queue-runs": False}}}
    cv = env.client.post(f"/api/v2/workspaces/{env.ws_id}/configuration-versions", json=body, headers=env.auth)
    assert env.client.put(_path(cv.json()["data"]["attributes"]["upload-url"]), content=_tarball("")).is_success
    run_body = {
        "data": {
            "type": "runs",
            "relationships": {
                "workspace": {"data": {"type": "workspaces", "id": env.ws_id}},
                "configuration-version": {"data": {"type": "configuration-versions", "id": cv.json()["data"]["id"]}},
            },
        }
    }
    run = env.client.post("/api/v2/runs", json=run_body, headers=env.auth).json()["data"]
    runner = {"Authorization": f"Bearer {env.container.runner_credentials.runner_token('acme')}"}
    spec = JobSpec.model_validate(
        env.client.post("/api/runner/jobs/next", json={"runner_id": "r1"}, headers=runner).json()
    )
    assert spec.configuration_md5 == hashlib.md5(_tarball("")).hexdigest()
    plan, plan_json = b"the plan", b'{"format_version": "1.2", "resource_changes": []}'
    assert spec.plan_upload_url and spec.plan_json_upload_url
    assert env.client.put(_path(spec.plan_upload_url), content=plan).status_code == 200
    assert env.client.put(_path(spec.plan_json_upload_url), content=plan_json).status_code == 200
    finish = {
        "runner_id": "r1",
        "status": "finished",
        "has_changes": True,
        "plan_md5": hashlib.md5(plan).hexdigest(),
        "plan_json_md5": hashlib.md5(plan_json).hexdigest(),
    }
    done = env.client.post(f"/api/runner/jobs/{spec.job_id}/finish", json=finish, headers=runner)
    assert done.status_code == 200, done.text

    assert env.client.put(_path(spec.plan_upload_url), content=b"a swapped plan").status_code == 409
    assert env.client.put(_path(spec.plan_json_upload_url), content=b"{}").status_code == 409
    plan_id = run["relationships"]["plan"]["data"]["id"]
    served = env.client.get(f"/api/v2/plans/{plan_id}/json-output", headers=env.auth)
    assert served.status_code == 200 and served.content == plan_json

    assert env.client.post(f"/api/v2/runs/{run['id']}/actions/apply", json={}, headers=env.auth).status_code == 202
    apply = JobSpec.model_validate(
        env.client.post("/api/runner/jobs/next", json={"runner_id": "r1"}, headers=runner).json()
    )
    assert (apply.plan_file_md5, apply.plan_file_size) == (hashlib.md5(plan).hexdigest(), len(plan))
    assert apply.plan_file_url and env.client.get(_path(apply.plan_file_url)).content == plan


# -- what the record check stops where a store could be written behind its back (memory twin) -----------------


def test_a_state_replaced_behind_its_record_is_not_served(state_env: Env) -> None:
    env = state_env
    env.lock()
    raw = state_bytes(1)
    sv = env.push(None, 1, md5_hex=md5(raw)).json()["data"]
    key = sv["attributes"]["hosted-state-upload-url"].removeprefix("memory://blobs/").split("?", 1)[0]
    env.land(key, raw)
    assert env.client.get(f"/api/v2/state-versions/{sv['id']}", headers=env.auth).json()["data"]["attributes"][
        "status"
    ] == ("finalized")
    download = f"/api/v2/state-versions/{sv['id']}/download"
    assert env.client.get(download, headers=env.auth, follow_redirects=False).status_code == 302
    assert env.client.post(f"/api/v2/workspaces/{env.ws_id}/actions/unlock", headers=env.auth).status_code == 200

    env.container.blobs.put(key, state_bytes(1, outputs={"x": {"value": "forged", "type": "string"}}))  # a replay
    refused = env.client.get(download, headers=env.auth, follow_redirects=False)
    assert refused.status_code == 409 and "does not match its record" in refused.json()["errors"][0]["detail"]
    http_backend = env.client.get(f"/state/v1/acme/{env.ws().name}", auth=("user", env.token))
    assert http_backend.status_code == 409


def _planned(env: RunEnv, plan: bytes, plan_json: bytes, **reported: str) -> tuple[dict[str, Any], dict[str, Any]]:
    run = env.create_run(env.upload_config())
    spec = env.claim()
    env.blobs.put(spec["plan_upload_url"].removeprefix("memory://blobs/").split("?", 1)[0], plan)
    env.blobs.put(spec["plan_json_upload_url"].removeprefix("memory://blobs/").split("?", 1)[0], plan_json)
    finish = {"runner_id": "r1", "status": "finished", "has_changes": True, **reported}
    assert env.runner("POST", f"/jobs/{spec['job_id']}/finish", json=finish).status_code == 200
    return run, spec


def test_a_plan_json_replaced_behind_its_record_is_not_served() -> None:
    env = make_run_env()
    run, spec = _planned(env, b"plan", b'{"resource_changes": []}')
    plan_id = run["relationships"]["plan"]["data"]["id"]
    url = f"/plans/{plan_id}/json-output"
    assert env.api("GET", url, follow_redirects=False).status_code == 307
    env.blobs.put(spec["plan_json_upload_url"].removeprefix("memory://blobs/").split("?", 1)[0], b'{"forged": 1}')
    assert env.api("GET", url, follow_redirects=False).status_code == 409
    assert env.api("GET", f"/plans/{plan_id}/json-output-redacted").status_code == 409


def test_a_plan_not_the_one_the_runner_uploaded_errors_the_run() -> None:
    env = make_run_env()
    run, _ = _planned(env, b"swapped before the finish", b"{}", plan_md5=hashlib.md5(b"uploaded").hexdigest())
    assert env.run(run["id"])["attributes"]["status"] == "errored"
    assert "does not match its record" in str(env.container.run_store.load(run["id"]).error_message)


def test_each_plan_attempt_uploads_to_keys_of_its_own() -> None:
    env = make_run_env(job_retry_base_s=0)
    env.create_run(env.upload_config())
    first = env.claim()
    key = first["plan_upload_url"].removeprefix("memory://blobs/").split("?", 1)[0]
    env.blobs.put(key, b"attempt 1's plan")
    run = env.container.run_store.load(first["run_id"])  # the reaper retries the attempt
    env.container.job_retries.retry_or_fail(run, "plan", "missed heartbeats")
    second = env.claim()
    assert second["attempt"] == 2 and second["plan_upload_url"] != first["plan_upload_url"]
    assert env.blobs.head(key) is None  # the earlier attempt's objects are gone: nothing reads them


def test_the_runner_applies_only_the_recorded_plan(tmp_path: Path) -> None:
    from terrace.runner.plan_files import check_recorded

    stored = tmp_path / "plan.stored"
    stored.write_bytes(b"the plan")
    base: dict[str, Any] = {
        "job_id": "apply-1",
        "run_id": "run-1",
        "phase": "apply",
        "attempt": 1,
        "organization": "acme",
        "workspace_id": "ws-1",
        "workspace_name": "app",
        "terraform_version": "latest",
        "operation": {},
        "hostname": "localhost",
        "run_token": "t",
        "configuration_url": "https://x",
    }
    check_recorded(JobSpec(**base, plan_file_md5=hashlib.md5(b"the plan").hexdigest(), plan_file_size=8), stored)
    check_recorded(JobSpec(**base), stored)  # a plan finished before plans were recorded
    with pytest.raises(JobFailed, match="not the plan recorded"):
        check_recorded(JobSpec(**base, plan_file_md5=hashlib.md5(b"a swapped plan").hexdigest()), stored)
    with pytest.raises(JobFailed, match="size differs"):
        check_recorded(JobSpec(**base, plan_file_size=9), stored)
