"""Query runs (`terraform query`, terraform 1.14+): HCP Terraform's Query Runs API as go-tfe v1.109 and terraform's
`cloud` block use it (`POST /queries`, reads with `include`, a workspace's list, cancel, force-cancel, the log as
JSON lines through `log-read-url`), a query run as its own kind of job (lowest lane, no plan upload, `query` in
its operation), never read as a run, and the runner's command line and version check."""

from __future__ import annotations

import io
from typing import Any

import pytest
from run_helpers import RunEnv, make_run_env
from runner_fakes import FakeApi, fake_terraform, make_spec, runner_config, tarball
from terrace.domain import query_runs
from terrace.domain.jobs import Operation
from terrace.runner import commands
from terrace.runner.execution import JobExecutor
from terrace.runner.rundir import RunSetupError

JSON_LINES = (
    b'{"@level":"info","@message":"Terraform 1.15.9","type":"version","terraform":"1.15.9","ui":"1.3"}\n'
    b'{"@level":"info","@message":"list.x.y: List complete","type":"list_complete",'
    b'"list_complete":{"address":"list.x.y","resource_type":"x","total":0}}\n'
)


@pytest.fixture(scope="module")
def env() -> RunEnv:
    env = make_run_env()
    env.upload_config()
    return env


def _create(env: RunEnv, attributes: dict[str, Any] | None = None, cv_id: str | None = None, **rel: Any) -> Any:
    relationships: dict[str, Any] = {"workspace": {"data": {"type": "workspaces", "id": env.workspace_id}}, **rel}
    if cv_id:
        relationships["configuration-version"] = {"data": {"type": "configuration-versions", "id": cv_id}}
    body = {"data": {"type": "queries", "attributes": attributes or {"source": "tfe-api"},
                     "relationships": relationships}}  # fmt: skip
    return env.api("POST", "/queries", body)


def _work(env: RunEnv, status: str = "finished", log: bytes = JSON_LINES, error: str | None = None) -> dict[str, Any]:
    spec = env.claim()
    assert env.runner("PUT", f"/jobs/{spec['job_id']}/logs?offset=0", content=log).status_code == 204
    report = {"runner_id": "r1", "status": status, "error_message": error}
    assert env.runner("POST", f"/jobs/{spec['job_id']}/finish", json=report).status_code == 200
    return spec


def test_a_query_run_is_queued_as_its_own_kind_of_job_and_read_as_hcp_shapes_it(env: RunEnv) -> None:
    made = _create(env)
    assert made.status_code == 201, made.text
    query = made.json()["data"]
    assert query["type"] == "queries" and query["id"].startswith("qry-")
    attrs = query["attributes"]
    assert attrs["status"] == "queued" and attrs["source"] == "tfe-api"
    assert attrs["generate-config-out"] is True  # HCP's default when the request leaves it out
    assert attrs["status-timestamps"]["queuing-at"] and attrs["log-read-url"]
    assert query["relationships"]["workspace"]["data"]["id"] == env.workspace_id
    assert query["relationships"]["configuration-version"]["data"]["id"].startswith("cv-")
    (job,) = [j for j in env.queued() if j.job_id == f"plan-{query['id'].removeprefix('qry-')}"]
    assert job.lane == "speculative"  # the lowest lane, as a speculative plan: it takes no workspace lock
    spec = env.claim()
    assert spec["operation"]["query"] is True and spec["operation"]["generate_config_out"] is True
    assert spec["plan_upload_url"] is None and spec["plan_json_upload_url"] is None  # a query leaves no plan
    running = env.api("GET", f"/queries/{query['id']}?include=created-by").json()
    assert running["data"]["attributes"]["status"] == "running"
    (user,) = running["included"]
    assert user["type"] == "users" and user["attributes"]["username"] == "alice"
    assert env.runner("PUT", f"/jobs/{spec['job_id']}/logs?offset=0", content=JSON_LINES).status_code == 204
    finish = {"runner_id": "r1", "status": "finished"}
    assert env.runner("POST", f"/jobs/{spec['job_id']}/finish", json=finish).status_code == 200
    done = env.api("GET", f"/queries/{query['id']}").json()["data"]["attributes"]
    assert done["status"] == "finished" and done["status-timestamps"]["finished-at"]
    log = env.client.get(done["log-read-url"], params={"offset": 0, "limit": 65536})
    assert log.content == b"\x02" + JSON_LINES + b"\x03"  # the JSON lines the CLI renders, framed as a plan's log
    # never a run: not among the workspace's runs, not readable as one, nor its phase as a plan
    run_id = query_runs.run_id_of(query["id"])
    assert env.api("GET", f"/runs/{run_id}").status_code == 404
    assert env.api("GET", f"/plans/{spec['job_id']}").status_code == 404
    assert env.api("POST", f"/runs/{run_id}/actions/cancel").status_code == 404
    assert all(r["id"] != run_id for r in env.api("GET", f"/workspaces/{env.workspace_id}/runs").json()["data"])


def test_a_workspace_lists_its_query_runs_paged(env: RunEnv) -> None:
    made = _create(env).json()["data"]
    assert env.api("POST", f"/queries/{made['id']}/actions/cancel").status_code == 202
    listed = env.api("GET", f"/workspaces/{env.workspace_id}/queries?include=created_by").json()
    assert listed["data"][0]["id"] == made["id"]  # newest first
    assert listed["included"][0]["attributes"]["username"] == "alice"
    total = listed["meta"]["pagination"]["total-count"]
    assert total == len(listed["data"]) >= 1 and all(q["type"] == "queries" for q in listed["data"])
    far = env.api("GET", f"/workspaces/{env.workspace_id}/queries?page[number]=999&page[size]=100").json()
    assert far["data"] == [] and far["meta"]["pagination"]["current-page"] == 999
    assert far["meta"]["pagination"]["total-count"] == total
    assert env.api("GET", "/workspaces/ws-nonexisting/queries").status_code == 404


def test_generate_config_out_and_an_errored_query(env: RunEnv) -> None:
    cv = env.upload_config()
    made = _create(env, {"source": "tfe-api", "generate-config-out": False}, cv_id=cv).json()["data"]
    assert made["attributes"]["generate-config-out"] is False
    assert made["relationships"]["configuration-version"]["data"]["id"] == cv
    spec = _work(env, status="errored", error="the query failed (exit code 1)")
    assert spec["operation"]["generate_config_out"] is False
    done = env.api("GET", f"/queries/{made['id']}").json()["data"]["attributes"]
    assert done["status"] == "errored" and done["status-timestamps"]["errored-at"]
    assert "exit code 1" in done["error-message"]


def test_cancel_and_force_cancel(env: RunEnv) -> None:
    queued = _create(env).json()["data"]
    assert env.api("POST", f"/queries/{queued['id']}/actions/force-cancel").status_code == 409  # cancel it first
    assert env.api("POST", f"/queries/{queued['id']}/actions/cancel").status_code == 202
    assert env.api("GET", f"/queries/{queued['id']}").json()["data"]["attributes"]["status"] == "canceled"
    assert env.api("POST", f"/queries/{queued['id']}/actions/cancel").status_code == 409  # it has ended
    running = _create(env).json()["data"]
    spec = env.claim()
    assert env.api("POST", f"/queries/{running['id']}/actions/cancel").status_code == 202
    beat = env.runner("POST", f"/jobs/{spec['job_id']}/heartbeat", json={"runner_id": "r1"}).json()
    assert beat["cancel"] is True  # the runner interrupts terraform query
    assert env.api("POST", f"/queries/{running['id']}/actions/force-cancel").status_code == 202  # cooloff 0 here
    assert env.api("GET", f"/queries/{running['id']}").json()["data"]["attributes"]["status"] == "canceled"


@pytest.mark.parametrize(
    ("attributes", "relationships", "status"),
    [
        ({"source": "tfe-api"}, {}, 422),  # no workspace
        ({"source": "tfe-ui"}, None, 422),
        ({"source": "tfe-api", "generate-config-out": "yes"}, None, 422),
        ({"source": "tfe-api", "variables": [{"key": 1}]}, None, 422),
        ({"source": "tfe-api", "terraform-version": ["1.15"]}, None, 422),
        ({"source": "tfe-api"}, {"workspace": {"data": {"type": "workspaces", "id": "ws-nonexisting"}}}, 404),
        (
            {"source": "tfe-api"},
            {"configuration-version": {"data": {"type": "configuration-versions", "id": "cv-nonexisting"}}},
            404,
        ),  # fmt: skip
    ],
)
def test_bad_input_is_a_clear_4xx(env: RunEnv, attributes: Any, relationships: Any, status: int) -> None:
    rel = {"workspace": {"data": {"type": "workspaces", "id": env.workspace_id}}}
    rel = rel if relationships is None else (relationships if "configuration-version" not in relationships
                                             else {**rel, **relationships})  # fmt: skip
    body = {"data": {"type": "queries", "attributes": attributes, "relationships": rel}}
    answer = env.api("POST", "/queries", body)
    assert answer.status_code == status, answer.text
    assert answer.json()["errors"]


def test_unknown_ids_are_not_found() -> None:
    env = make_run_env()
    run = env.create_run(env.upload_config(), **{"plan-only": True})
    for query_id in ("nonexisting", "qry-", "run-abc", query_runs.query_id(run["id"])):  # a run is not a query run
        assert env.api("GET", f"/queries/{query_id}").status_code == 404
        assert env.api("POST", f"/queries/{query_id}/actions/cancel").status_code == 404
        assert env.api("POST", f"/queries/{query_id}/actions/force-cancel").status_code == 404


def test_a_workspace_without_a_configuration_version_cannot_query() -> None:
    env = make_run_env()
    answer = _create(env)
    assert answer.status_code == 422 and "configuration version" in answer.text


# the runner ---------------------------------------------------------------------------------------------------
def test_the_runner_runs_terraform_query_as_json_lines(tmp_path: Any) -> None:
    generated = tmp_path / "generated.tf"
    assert commands.query_args(Operation(query=True), generated) == ["query", "-no-color", "-json"]
    asked = Operation(query=True, generate_config_out=True)
    assert commands.query_args(asked, generated) == ["query", "-no-color", "-json", f"-generate-config-out={generated}"]


@pytest.mark.parametrize(
    ("product", "version", "supported"),
    [("Terraform", "1.14.0", True), ("Terraform", "1.15.9", True), ("Terraform", "2.0.0", True),
     ("Terraform", "1.13.5", False), ("Terraform", "1.0.3", False), ("Terraform", "", False),
     ("OpenTofu", "1.9.4", False)],
)  # fmt: skip
def test_a_binary_without_terraform_query_errors_the_query_run_clearly(product: str, version: str, supported: bool):
    binary = commands.Binary(path="/bin/tf", version=version, product=product)
    if supported:
        commands.check_query(binary)
        return
    with pytest.raises(RunSetupError, match="query run .* needs Terraform 1.14 or newer"):
        commands.check_query(binary)


def test_a_query_job_runs_terraform_query_in_the_sandbox_and_uploads_nothing(tmp_path: Any) -> None:
    spec = make_spec("plan", operation=Operation(speculative=True, query=True, generate_config_out=True),
                     plan_upload_url=None, plan_json_upload_url=None)  # fmt: skip
    fake = FakeApi(blobs={"config.tar.gz": tarball({"main.tf": "", "main.tfquery.hcl": ""})})
    script = fake_terraform(tmp_path / "bin", version="1.15.9")
    fake.specs[spec.job_id] = spec
    api, transfers = fake.clients()
    report = JobExecutor(runner_config(tmp_path, script), api, transfers, echo_to=io.StringIO()).execute(spec, True)
    assert report.status == "finished", report.error_message
    assert not report.keep_for_apply and not report.has_changes
    run = [(tmp_path / "bin" / f"call-{i}.args").read_text().splitlines() for i in range(3)]
    assert [args[0] for args in run] == ["version", "init", "query"]
    assert run[2][:3] == ["query", "-no-color", "-json"] and run[2][3].startswith("-generate-config-out=")
    assert b'"type":"version"' in fake.logs[spec.job_id]  # the JSON lines, to the plan phase's log


def test_a_query_job_on_an_older_terraform_errors_before_anything_runs(tmp_path: Any) -> None:
    spec = make_spec("plan", operation=Operation(speculative=True, query=True))
    fake = FakeApi(blobs={"config.tar.gz": tarball({"main.tf": ""})})
    script = fake_terraform(tmp_path / "bin", version="1.13.4")
    fake.specs[spec.job_id] = spec
    api, transfers = fake.clients()
    report = JobExecutor(runner_config(tmp_path, script), api, transfers, echo_to=io.StringIO()).execute(spec, True)
    assert report.status == "errored" and "needs Terraform 1.14 or newer" in (report.error_message or "")
    assert not (tmp_path / "bin" / "init-files").exists()  # no init, no query
