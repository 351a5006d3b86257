"""A plan's upload URLs are asked for just before each upload: the ones in the job's spec were signed at the claim,
on AWS by the API Lambda role's temporary session, and die with it before the job's deadline."""

from __future__ import annotations

import io
from pathlib import Path

from run_helpers import make_run_env
from runner_fakes import S3, FakeApi, fake_terraform, make_spec, runner_config, tarball
from terrace.runner.execution import JobExecutor


def test_the_runner_uploads_its_plan_to_urls_fetched_just_before_not_to_the_specs_expired_ones(tmp_path: Path):
    fake = FakeApi(
        blobs={"config.tar.gz": tarball({"main.tf": ""})},
        fresh_upload_urls={"plan_upload_url": f"{S3}/plan.tfplan?sig=now", "plan_json_upload_url": f"{S3}/plan.json"},
    )
    spec = make_spec(  # signed at the claim by a session that has ended since: S3 refuses them
        "plan", plan_upload_url=f"{S3}/expired/plan.tfplan", plan_json_upload_url=f"{S3}/expired/plan.json"
    )
    fake.specs[spec.job_id] = spec
    api, transfers = fake.clients()
    executor = JobExecutor(
        runner_config(tmp_path, fake_terraform(tmp_path / "bin")), api, transfers, echo_to=io.StringIO()
    )
    report = executor.execute(spec)
    assert report.status == "finished", report.error_message
    assert fake.blobs["plan.tfplan"] == b"binary-plan\n" and b"resource_changes" in fake.blobs["plan.json"]
    assert fake.upload_url_asks == [spec.job_id, spec.job_id]  # once before each upload
    assert report.plan_md5 and report.plan_json_md5


def test_upload_urls_are_signed_now_for_the_runner_working_the_plan_only():
    env = make_run_env()
    run = env.create_run(env.upload_config())
    spec = env.claim("r1")
    job = spec["job_id"]
    fresh = env.runner("POST", f"/jobs/{job}/upload-urls", json={"runner_id": "r1"})
    assert fresh.status_code == 200, fresh.text
    urls = fresh.json()
    assert urls["plan_upload_url"].startswith("memory://blobs/") and "op=put" in urls["plan_upload_url"]
    assert urls["plan_json_upload_url"].split("?")[0] == spec["plan_json_upload_url"].split("?")[0]
    other = env.runner("POST", f"/jobs/{job}/upload-urls", json={"runner_id": "r2"})
    assert other.status_code == 409  # not the runner working it
    stranger = make_run_env("other").runner_token
    hidden = env.runner("POST", f"/jobs/{job}/upload-urls", json={"runner_id": "r1"}, token=stranger)
    assert hidden.status_code in (401, 404)  # another organization's runner learns nothing
    done = env.runner("POST", f"/jobs/{job}/finish", json={"runner_id": "r1", "status": "errored"})
    assert done.status_code == 200, done.text
    assert env.runner("POST", f"/jobs/{job}/upload-urls", json={"runner_id": "r1"}).status_code == 409
    apply = env.runner("POST", f"/jobs/apply-{run['id'][4:]}/upload-urls", json={"runner_id": "r1"})
    assert apply.status_code == 409 and "uploads no plan" in apply.text


def test_a_plans_upload_urls_exist_for_its_pools_agents_only():
    """An agent pool's plan: another pool's agent, and the organization's own runner, get the 404 of a job that
    does not exist (`Authorizer.require_job`, as every other runner route), never a 409 that tells it is running."""
    env = make_run_env()
    pools = []
    for name in ("vpc", "other"):
        created = env.api("POST", "/organizations/acme/agent-pools", {"data": {"type": "agent-pools",
                          "attributes": {"name": name}}})  # fmt: skip
        assert created.status_code == 201, created.text
        pool_id = created.json()["data"]["id"]
        token = {"data": {"type": "authentication-tokens", "attributes": {"description": "ci"}}}
        secret = env.api("POST", f"/agent-pools/{pool_id}/authentication-tokens", token).json()["data"]
        secret = secret["attributes"]["token"]
        registered = env.client.post("/api/agent/register", json={}, headers={"Authorization": f"Bearer {secret}"})
        assert registered.status_code == 200, registered.text
        pools.append((pool_id, secret, registered.json()["agent_id"]))
    (pool_id, secret, agent), (_, other_secret, other_agent) = pools
    agent_mode = {"data": {"type": "workspaces", "attributes": {"execution-mode": "agent", "agent-pool-id": pool_id}}}
    assert env.api("PATCH", f"/workspaces/{env.workspace_id}", agent_mode).status_code == 200
    env.create_run(env.upload_config())
    job = env.claim(agent, token=secret)["job_id"]
    path = f"/jobs/{job}/upload-urls"
    another_pool = env.runner("POST", path, json={"runner_id": other_agent}, token=other_secret)
    assert another_pool.status_code == 404, another_pool.text
    assert env.runner("POST", path, json={"runner_id": "r1"}).status_code == 404  # the organization's runner
    assert (
        env.runner("POST", "/jobs/plan-absent/upload-urls", json={"runner_id": agent}, token=secret).status_code == 404
    )
    mine = env.runner("POST", path, json={"runner_id": agent}, token=secret)
    assert mine.status_code == 200 and mine.json()["plan_upload_url"], mine.text
