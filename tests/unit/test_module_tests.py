"""Registry module test runs (`terraform test -cloud-run=<host>/<org>/<name>/<provider>`): the calls terraform's
`internal/cloud/test.go` makes through go-tfe v1.109 (`ConfigurationVersions.CreateForRegistryModule`, the upload,
`TestRuns.Create`, `Read` until it leaves `queued`, `Logs`, `Cancel`) and `TestVariables`, replayed against the
in-process app; a test run as its own kind of job in the module's unlisted test workspace; who may reach it; what
a module's deletion takes with it; and the runner's `terraform test -json` in the job sandbox."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from policy_helpers import call, member
from run_helpers import RunEnv, make_run_env, tarball
from runner_fakes import FakeApi, fake_terraform, make_spec, runner_config
from table_items import memory_items
from terrace.domain import module_tests
from terrace.domain.jobs import ModuleTestOptions, Operation
from terrace.domain.principal import PrincipalKind
from terrace.runner.execution import JobExecutor
from terrace.runner.rundir import OVERRIDE_FILE

BASE = "/organizations/acme/tests/registry-modules/private/acme/vpc/aws"
JSON_LINES = (
    b'{"@level":"info","@message":"Terraform 1.15.9","type":"version","terraform":"1.15.9","ui":"1.2"}\n'
    b'{"@level":"info","@message":"Success! 1 passed, 0 failed.","type":"test_summary",'
    b'"test_summary":{"status":"pass","passed":1,"failed":0,"errored":0,"skipped":0}}\n'
)
SUMMARY = {"status": "pass", "passed": 1, "failed": 0, "errored": 0, "skipped": 0}


def _module(env: RunEnv, name: str = "vpc") -> dict[str, Any]:
    body = {"data": {"type": "registry-modules", "attributes": {"name": name, "provider": "aws",
                                                                "registry-name": "private"}}}  # fmt: skip
    made = env.api("POST", "/organizations/acme/registry-modules", body)
    assert made.status_code == 201, made.text
    return dict(made.json()["data"])


def _configuration(env: RunEnv, base: str = BASE) -> str:
    made = env.api("POST", f"{base}/test-runs/configuration-versions")  # go-tfe sends no body
    assert made.status_code == 201, made.text
    cv = made.json()["data"]
    key = cv["attributes"]["upload-url"].split("memory://blobs/")[1].split("?")[0]
    env.land(key, tarball({"main.tf": 'variable "n" {}', "tests/main.tftest.hcl": 'run "x" {}'}))
    return str(cv["id"])


def _create(env: RunEnv, cv_id: str, base: str = BASE, **attributes: Any) -> Any:
    relationships = {
        "configuration-version": {"data": {"type": "configuration-versions", "id": cv_id}},
        "registry-module": {"data": {"type": "registry-modules", "id": "mod-ignored"}},
    }
    body = {"data": {"type": "test-runs", "attributes": attributes, "relationships": relationships}}
    return env.api("POST", f"{base}/test-runs", body)


@pytest.fixture(scope="module")
def env() -> RunEnv:
    env = make_run_env()
    _module(env)
    return env


def test_a_test_run_goes_as_the_cli_drives_it(env: RunEnv) -> None:
    cv_id = _configuration(env)
    attributes = {"filters": ["tests/main.tftest.hcl"], "test-directory": "tests", "verbose": True,
                  "parallelism": 10, "variables": [{"key": "n", "value": "3"}]}  # fmt: skip
    made = _create(env, cv_id, **attributes)
    assert made.status_code == 201, made.text
    test_run = made.json()["data"]
    assert test_run["type"] == "test-runs" and test_run["id"].startswith("trun-")
    attrs = test_run["attributes"]
    assert (attrs["status"], attrs["test-status"], attrs["tests-passed"]) == ("queued", "pending", 0)
    assert test_run["relationships"]["configuration-version"]["data"]["id"] == cv_id
    module_id = test_run["relationships"]["registry-module"]["data"]["id"]
    assert module_id.startswith("mod-")
    (job,) = [j for j in env.queued() if j.job_id.endswith(test_run["id"].removeprefix("trun-"))]
    assert job.lane == "speculative"
    spec = env.claim()
    options = spec["operation"]["test"]
    assert options == {"filters": ["tests/main.tftest.hcl"], "test_directory": "tests", "verbose": True,
                       "parallelism": 10}  # fmt: skip
    assert spec["plan_upload_url"] is None and spec["plan_json_upload_url"] is None  # a test leaves no plan
    assert {(v["key"], v["value"]) for v in spec["variables"]} >= {("n", "3")}
    running = env.api("GET", f"{BASE}/test-runs/{test_run['id']}").json()["data"]["attributes"]
    assert running["status"] == "running" and running["log-read-url"]
    assert env.runner("PUT", f"/jobs/{spec['job_id']}/logs?offset=0", content=JSON_LINES).status_code == 204
    finish = {"runner_id": "r1", "status": "finished", "test_summary": SUMMARY}
    assert env.runner("POST", f"/jobs/{spec['job_id']}/finish", json=finish).status_code == 200
    done = env.api("GET", f"{BASE}/test-runs/{test_run['id']}").json()["data"]["attributes"]
    assert (done["status"], done["test-status"], done["tests-passed"]) == ("finished", "pass", 1)
    assert done["status-timestamps"]["finished-at"]
    log = env.client.get(done["log-read-url"], params={"offset": 0, "limit": 65536})
    assert log.content == b"\x02" + JSON_LINES + b"\x03"
    listed = env.api("GET", f"{BASE}/test-runs?page[number]=999&page[size]=100").json()
    assert listed["data"] == [] and listed["meta"]["pagination"]["current-page"] == 999
    assert test_run["id"] in [r["id"] for r in env.api("GET", f"{BASE}/test-runs").json()["data"]]
    # the test workspace is nobody's workspace: not listed, not readable, its runs no runs
    ws_id = module_tests.test_workspace_id(module_id)
    names = [w["attributes"]["name"] for w in env.api("GET", "/organizations/acme/workspaces").json()["data"]]
    assert names == ["app"]
    assert env.api("GET", f"/workspaces/{ws_id}").status_code == 404
    assert env.api("GET", f"/workspaces/{ws_id}/vars").status_code == 404
    assert env.api("GET", f"/runs/{module_tests.run_id_of(test_run['id'])}").status_code == 404
    read = env.api("GET", f"/configuration-versions/{cv_id}").json()["data"]  # as on HCP, to module managers
    assert read["attributes"]["status"] == "uploaded" and not read["attributes"].get("upload-url")


def test_failed_tests_and_a_canceled_test_run(env: RunEnv) -> None:
    cv_id = _configuration(env)
    failing = _create(env, cv_id).json()["data"]
    spec = env.claim()
    summary = {**SUMMARY, "status": "fail", "passed": 0, "failed": 2}
    finish = {"runner_id": "r1", "status": "finished", "test_summary": summary}
    assert env.runner("POST", f"/jobs/{spec['job_id']}/finish", json=finish).status_code == 200
    attrs = env.api("GET", f"{BASE}/test-runs/{failing['id']}").json()["data"]["attributes"]
    assert (attrs["status"], attrs["test-status"], attrs["tests-failed"]) == ("finished", "fail", 2)
    canceled = _create(env, cv_id).json()["data"]
    spec = env.claim()
    assert env.api("POST", f"{BASE}/test-runs/{canceled['id']}/cancel").status_code == 202
    beat = env.runner("POST", f"/jobs/{spec['job_id']}/heartbeat", json={"runner_id": "r1"}).json()
    assert beat["cancel"] is True  # the runner interrupts terraform test (which then destroys what it made)
    assert env.api("POST", f"{BASE}/test-runs/{canceled['id']}/force-cancel").status_code == 202
    assert env.api("GET", f"{BASE}/test-runs/{canceled['id']}").json()["data"]["attributes"]["status"] == "canceled"


def test_a_lost_test_run_is_not_retried(env: RunEnv) -> None:
    """A runner lost mid-test (missed heartbeats) ends the test run errored: run again, its tests would create
    their resources again."""
    test_run = _create(env, _configuration(env)).json()["data"]
    env.claim()
    run = env.container.run_store.load(module_tests.run_id_of(test_run["id"]) or "")
    env.container.job_retries.retry_or_fail(run, "plan", "missed heartbeats")
    attrs = env.api("GET", f"{BASE}/test-runs/{test_run['id']}").json()["data"]["attributes"]
    assert attrs["status"] == "errored" and "not retried" in attrs["error-message"]
    assert not [j for j in env.queued() if j.job_id.endswith(test_run["id"].removeprefix("trun-"))]


def test_test_variables_are_the_module_s_and_reach_its_test_runs(env: RunEnv) -> None:
    base = "/organizations/acme/tests/registry-modules/private/acme/net/aws"
    _module(env, "net")
    assert env.api("GET", f"{base}/vars").json()["data"] == []  # a read makes nothing
    body = {"data": {"type": "vars", "attributes": {"key": "AWS_SECRET", "value": "s3cr3t", "category": "env",
                                                    "sensitive": True, "description": "d"}}}  # fmt: skip
    made = env.api("POST", f"{base}/vars", body)
    assert made.status_code == 201, made.text
    var = made.json()["data"]
    assert var["attributes"]["value"] is None and var["relationships"]["configurable"]["data"]["type"] == (
        "registry-modules"
    )
    assert [v["id"] for v in env.api("GET", f"{base}/vars").json()["data"]] == [var["id"]]
    assert env.api("GET", f"{base}/vars/{var['id']}").json()["data"]["attributes"]["key"] == "AWS_SECRET"
    patch = {"data": {"type": "vars", "attributes": {"description": "changed"}}}
    assert env.api("PATCH", f"{base}/vars/{var['id']}", patch).json()["data"]["attributes"]["description"] == "changed"
    _create(env, _configuration(env, base), base)
    spec = env.claim()
    assert ("AWS_SECRET", "s3cr3t", "env") in {(v["key"], v["value"], v["category"]) for v in spec["variables"]}
    assert env.api("DELETE", f"{base}/vars/{var['id']}").status_code == 204
    assert env.api("GET", f"{base}/vars").json()["data"] == []
    assert env.api("GET", f"{base}/vars/{var['id']}").status_code == 404


def test_no_variable_set_reaches_a_module_s_tests(env: RunEnv) -> None:
    """A global set, or one of the Default Project, reaches every workspace but a module's test workspace: whoever
    manages modules must not read the organization's credentials through a test."""
    varset = {"data": {"type": "varsets", "attributes": {"name": "cloud-creds", "global": True}}}
    made = env.api("POST", "/organizations/acme/varsets", varset).json()["data"]
    secret = {"data": {"type": "vars", "attributes": {"key": "CLOUD_TOKEN", "value": "org-wide", "category": "env",
                                                       "sensitive": True}}}  # fmt: skip
    assert env.api("POST", f"/varsets/{made['id']}/relationships/vars", secret).status_code == 201
    try:
        _create(env, _configuration(env))
        spec = env.claim()
        assert "CLOUD_TOKEN" not in {v["key"] for v in spec["variables"]}
    finally:
        assert env.api("DELETE", f"/varsets/{made['id']}").status_code == 204


def test_a_test_run_gets_no_workload_identity_token() -> None:
    """A token naming the module's test workspace must never pass for a workspace a cloud trusts: a test run's job
    carries none, whatever its test variables ask (its workspace's name has a colon no workspace name has)."""
    env = make_run_env(public_url="https://terrace.example.com/")
    base = "/organizations/acme/tests/registry-modules/private/acme/app/aws"
    _module(env, "app")  # the name of the organization's workspace
    for key, value in (("TFC_AWS_PROVIDER_AUTH", "true"), ("TFC_AWS_RUN_ROLE_ARN", "arn:aws:iam::1:role/x")):
        body = {"data": {"type": "vars", "attributes": {"key": key, "value": value, "category": "env"}}}
        assert env.api("POST", f"{base}/vars", body).status_code == 201
    _create(env, _configuration(env, base), base)
    spec = env.claim()
    assert spec["workload_credentials"] == []
    assert spec["workspace_name"] == "module-tests:app" and spec["workspace_name"] != "app"


def test_only_module_managers_reach_a_module_s_tests(env: RunEnv) -> None:
    reader = member(env, "reader", **{"read-workspaces": True, "manage-workspaces": True})
    manager = member(env, "modmanager", **{"manage-modules": True})
    stranger = env.container.accounts.create_user("stranger", "s@example.com")
    outsider = env.container.accounts.issue_token(PrincipalKind.USER, stranger.id).secret
    paths = [f"{BASE}/test-runs", f"{BASE}/vars", f"{BASE}/test-runs/trun-abc"]
    for path in paths:  # a member sees the module but may not manage it; to others it is not there
        assert call(env, reader, "GET", path).status_code == 403
        assert call(env, outsider, "GET", path).status_code == 404
    assert call(env, reader, "POST", f"{BASE}/test-runs/configuration-versions").status_code == 403
    assert call(env, outsider, "POST", f"{BASE}/test-runs/configuration-versions").status_code == 404
    assert call(env, manager, "GET", f"{BASE}/test-runs").status_code == 200
    made = call(env, manager, "POST", f"{BASE}/test-runs/configuration-versions")
    assert made.status_code == 201 and made.json()["data"]["attributes"]["upload-url"]
    cv_path = f"/configuration-versions/{made.json()['data']['id']}"
    assert call(env, manager, "GET", cv_path).status_code == 200
    assert call(env, reader, "GET", cv_path).status_code == 403  # sees the module, may not manage it
    assert call(env, outsider, "GET", cv_path).status_code == 404


@pytest.mark.parametrize(
    ("attributes", "status"),
    [
        ({"filters": "tests/a.tftest.hcl"}, 422),
        ({"filters": [""]}, 422),
        ({"test-directory": "../elsewhere"}, 422),
        ({"test-directory": "/abs"}, 422),
        ({"verbose": "yes"}, 422),
        ({"parallelism": 0}, 422),
        ({"parallelism": 257}, 422),
        ({"parallelism": True}, 422),
        ({"variables": [{"key": 1}]}, 422),
    ],
)
def test_bad_input_is_a_clear_4xx(env: RunEnv, attributes: Any, status: int) -> None:
    cv_id = _configuration(env)
    answer = _create(env, cv_id, **attributes)
    assert answer.status_code == status, answer.text
    assert answer.json()["errors"]


def test_unknown_modules_runs_and_configurations_are_not_found(env: RunEnv) -> None:
    other = "/organizations/acme/tests/registry-modules/private/acme/nosuch/aws"
    for path in (f"{other}/test-runs", f"{other}/vars", f"{BASE}/test-runs/trun-nosuch", f"{BASE}/test-runs/run-x"):
        answer = env.api("GET", path)
        assert answer.status_code == 404 and answer.json()["errors"], path
    assert env.api("POST", f"{other}/test-runs/configuration-versions").status_code == 404
    assert env.api("POST", f"{BASE}/test-runs/trun-nosuch/cancel").status_code == 404
    workspace_cv = env.upload_config()  # a workspace's configuration version is not the module's
    assert _create(env, workspace_cv).status_code == 404
    body = {"data": {"type": "test-runs", "attributes": {}}}
    assert env.api("POST", f"{BASE}/test-runs", body).status_code == 422  # no configuration version


def test_a_pending_configuration_cannot_be_tested(env: RunEnv) -> None:
    cv = env.api("POST", f"{BASE}/test-runs/configuration-versions").json()["data"]
    answer = _create(env, cv["id"])
    assert answer.status_code == 422 and "not uploaded" in answer.text


def test_deleting_a_module_or_its_organization_deletes_its_tests() -> None:
    env = make_run_env()
    module = _module(env)
    body = {"data": {"type": "vars", "attributes": {"key": "K", "value": "v", "category": "env"}}}
    assert env.api("POST", f"{BASE}/vars", body).status_code == 201
    test_run = _create(env, _configuration(env)).json()["data"]
    ws_id = module_tests.test_workspace_id(module["id"])
    suffix = test_run["id"].removeprefix("trun-")
    assert any(ws_id in json.dumps(item) for item in memory_items(env.container.table).values())
    assert env.api("DELETE", "/organizations/acme/registry-modules/private/acme/vpc/aws").status_code == 204
    items = memory_items(env.container.table).values()
    left = [i for i in items if ws_id in json.dumps(i) or suffix in json.dumps(i)]
    assert [i["pk"] for i in left] == ["org#acme#jobs"]  # its queued job, dropped when taken (as a workspace's)
    _module(env)  # again, with tests, then the organization goes
    _create(env, _configuration(env))
    assert env.api("DELETE", "/organizations/acme").status_code == 204
    assert [i for i in memory_items(env.container.table).values() if "-tests" in json.dumps(i)] == []


# the runner ---------------------------------------------------------------------------------------------------
def _execute(tmp_path: Any, options: ModuleTestOptions, version: str = "1.15.9", **fake: Any) -> Any:
    spec = make_spec("plan", operation=Operation(speculative=True, test=options), plan_upload_url=None,
                     plan_json_upload_url=None)  # fmt: skip
    api_fake = FakeApi(blobs={"config.tar.gz": tarball({"main.tf": "", "tests/a.tftest.hcl": ""})})
    script = fake_terraform(tmp_path / "bin", version=version, **fake)
    api_fake.specs[spec.job_id] = spec
    api, transfers = api_fake.clients()
    report = JobExecutor(runner_config(tmp_path, script), api, transfers, echo_to=io.StringIO()).execute(spec, True)
    return report, api_fake.logs.get(spec.job_id, b""), tmp_path / "bin"


def test_the_runner_runs_terraform_test_without_a_backend(tmp_path: Any) -> None:
    options = ModuleTestOptions(filters=["tests/a.tftest.hcl"], test_directory="tests", verbose=True, parallelism=4)
    report, log, calls = _execute(tmp_path, options)
    assert report.status == "finished", report.error_message
    assert report.test_summary is not None and report.test_summary.status == "pass"
    args = [(calls / f"call-{i}.args").read_text().splitlines() for i in range(3)]
    assert [a[0] for a in args] == ["version", "init", "test"]
    assert "-backend=false" in args[1]
    assert args[2] == ["test", "-no-color", "-json", "-filter=tests/a.tftest.hcl", "-test-directory=tests",
                       "-verbose", "-parallelism=4"]  # fmt: skip
    assert OVERRIDE_FILE not in (calls / "init-files").read_text()  # a test keeps its state in memory
    assert b'"type":"test_summary"' in log


def test_failing_tests_finish_and_no_summary_errors(tmp_path: Any) -> None:
    failing = 'echo \'{"type":"test_summary","test_summary":{"status":"fail","failed":1}}\'; exit 1'
    report, _, _ = _execute(tmp_path / "a", ModuleTestOptions(), test_body=failing)
    assert report.status == "finished" and report.test_summary.status == "fail" and report.test_summary.failed == 1
    report, _, _ = _execute(tmp_path / "b", ModuleTestOptions(), test_body="echo 'Error: bad'; exit 1")
    assert report.status == "errored" and "gave no summary (exit code 1)" in (report.error_message or "")


def test_an_older_binary_errors_before_anything_runs(tmp_path: Any) -> None:
    report, _, calls = _execute(tmp_path, ModuleTestOptions(parallelism=4), version="1.6.6")
    assert report.status == "errored" and "needs Terraform 1.7" in (report.error_message or "")
    assert not (calls / "init-files").exists()
    report, _, calls = _execute(tmp_path / "old", ModuleTestOptions(parallelism=4), version="1.11.4")
    assert report.status == "finished"  # 1.11 runs tests but has no -parallelism: it is not passed
    assert not [a for a in (calls / "call-2.args").read_text().splitlines() if a.startswith("-parallelism")]
