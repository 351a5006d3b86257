"""Whole jobs against a fake runner API and a fake terraform script."""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path

from runner_fakes import FakeApi, fake_terraform, make_spec, runner_config, tarball
from terrace.domain.jobs import FinishResponse, Operation
from terrace.runner.execution import JobExecutor
from terrace.runner.rundir import OVERRIDE_FILE, TFVARS_FILE


def run_job(tmp_path: Path, fake: FakeApi, spec, **binary_kwargs):  # type: ignore[no-untyped-def]
    script = fake_terraform(tmp_path / "bin", **binary_kwargs)
    fake.specs[spec.job_id] = spec
    api, transfers = fake.clients()
    executor = JobExecutor(runner_config(tmp_path, script), api, transfers, echo_to=io.StringIO())
    report = executor.execute(spec)
    return report, tmp_path / "bin", [], executor


def calls(rec: Path) -> list[list[str]]:
    return [(rec / f"call-{i}.args").read_text().splitlines() for i in range(len(list(rec.glob("call-*.args"))))]


def test_plan_job_runs_init_plan_show_uploads_and_counts(tmp_path: Path) -> None:
    fake = FakeApi(blobs={"config.tar.gz": tarball({"main.tf": "# config\n", "sub/x.tf": ""})})
    spec = make_spec("plan", operation=Operation(target_addrs=["a.b"]))
    report, rec, extended, _ = run_job(tmp_path, fake, spec)

    assert report.status == "finished", report.error_message
    assert report.has_changes is True
    assert (report.resource_additions, report.resource_changes, report.resource_destructions) == (2, 1, 1)
    argv = calls(rec)
    assert [c[0] for c in argv] == ["version", "init", "plan", "show"]
    assert "-target=a.b" in argv[2] and "-detailed-exitcode" in argv[2]
    assert fake.blobs["plan.tfplan"] == b"binary-plan\n"
    assert json.loads(fake.blobs["plan.json"])["resource_changes"][0]["address"] == "a.b"
    assert not fake.s3_auth_headers  # the runner token never goes to presigned URLs
    assert OVERRIDE_FILE in (rec / "init-files").read_text() and TFVARS_FILE in (rec / "init-files").read_text()

    log = bytes(fake.logs[spec.job_id]).decode()
    lines = log.splitlines()
    assert lines[0] == "Terraform v1.0.3" and lines[1] == "on linux_amd64" and "planning run run-abc" in lines[2]
    assert "Plan: 2 to add" in log
    assert "Initializing the backend" not in log  # init output is shown only when init fails
    assert "run-token-SECRET-123" not in log


def test_apply_job_banner_plan_download_and_counts(tmp_path: Path) -> None:
    fake = FakeApi(blobs={"config.tar.gz": tarball({"main.tf": ""}), "plan.tfplan": b"saved-plan"})
    spec = make_spec("apply")
    report, rec, _, _ = run_job(tmp_path, fake, spec)

    assert report.status == "finished", report.error_message
    assert (report.resource_additions, report.resource_changes, report.resource_destructions) == (2, 1, 1)
    assert (rec / "applied-plan").read_bytes() == b"saved-plan"
    assert [c[0] for c in calls(rec)] == ["version", "init", "apply"]
    assert fake.applying == [spec.job_id]  # announced before terraform apply started
    lines = bytes(fake.logs[spec.job_id]).decode().splitlines()
    assert lines[:2] == ["Terraform v1.0.3", "on linux_amd64"]
    assert lines[2] == "Terrace runner runner-test: applying run run-abc"
    assert "Apply complete!" in lines[-1]


def test_apply_the_api_does_not_acknowledge_never_starts(tmp_path: Path) -> None:
    fake = FakeApi(blobs={"config.tar.gz": tarball({"main.tf": ""}), "plan.tfplan": b"saved-plan"}, applying_status=409)
    spec = make_spec("apply")
    report, rec, _, _ = run_job(tmp_path, fake, spec)

    assert report.status == "errored"
    assert "nothing was applied" in (report.error_message or "")
    assert fake.applying == [spec.job_id]
    assert [c[0] for c in calls(rec)] == ["version", "init"]  # init ran (it changes nothing); apply never did
    assert not (rec / "applied-plan").exists()


def test_failed_plan_is_errored_with_the_log_tail(tmp_path: Path) -> None:
    fake = FakeApi(blobs={"config.tar.gz": tarball({"main.tf": ""})})
    report, _, _, _ = run_job(tmp_path, fake, make_spec("plan"), plan_exit=1, plan_body='echo "Error: boom" >&2')
    assert report.status == "errored"
    assert report.error_message and "plan failed (exit code 1)" in report.error_message
    assert "Error: boom" in report.error_message


def test_no_changes_plan(tmp_path: Path) -> None:
    fake = FakeApi(blobs={"config.tar.gz": tarball({"main.tf": ""})})
    report, _, _, _ = run_job(tmp_path, fake, make_spec("plan"), plan_exit=0)
    assert report.status == "finished" and report.has_changes is False


def test_unsafe_tarball_errors_the_job_and_runs_nothing(tmp_path: Path) -> None:
    fake = FakeApi(blobs={"config.tar.gz": tarball({"../escape.tf": "x"})})
    report, rec, _, _ = run_job(tmp_path, fake, make_spec("plan"))
    assert report.status == "errored" and "'..'" in (report.error_message or "")
    assert [c[0] for c in calls(rec)] == ["version"]
    assert not (tmp_path / "work" / "escape.tf").exists()


def test_unknown_terraform_version_lists_installed(tmp_path: Path) -> None:
    fake = FakeApi(blobs={"config.tar.gz": tarball({"main.tf": ""})})
    report, _, _, _ = run_job(tmp_path, fake, make_spec("plan", terraform_version="0.12.31"))
    assert report.status == "errored"
    assert "0.12.31" in (report.error_message or "") and "installed: 1.0.3" in (report.error_message or "")


def test_working_directory_is_honoured(tmp_path: Path) -> None:
    fake = FakeApi(blobs={"config.tar.gz": tarball({"infra/prod/main.tf": "", "modules/m/main.tf": ""})})
    report, rec, _, _ = run_job(tmp_path, fake, make_spec("plan", working_directory="infra/prod"))
    assert report.status == "finished", report.error_message
    assert (rec / "call-1.cwd").read_text().strip().endswith("/config/infra/prod")


def test_work_dir_is_cleaned_up(tmp_path: Path) -> None:
    fake = FakeApi(blobs={"config.tar.gz": tarball({"main.tf": ""})})
    spec = make_spec("plan")
    report, _, _, executor = run_job(tmp_path, fake, spec)
    assert report.keep_for_apply  # held for the same run's apply until the API's answer says otherwise
    executor.settled(spec, FinishResponse(run_status="planned_and_finished"))
    assert list((tmp_path / "work").iterdir()) == []


def test_a_plan_uploads_once_and_reports_what_it_uploaded(tmp_path: Path) -> None:
    fake = FakeApi(blobs={"config.tar.gz": tarball({"main.tf": ""})})
    report, _, _, _ = run_job(tmp_path, fake, make_spec("plan"))
    assert report.status == "finished", report.error_message
    assert [h.get("if-none-match") for h in fake.s3_put_headers] == ["*", "*"]  # never replaces an object
    assert report.plan_md5 == hashlib.md5(fake.blobs["plan.tfplan"]).hexdigest()
    assert report.plan_json_md5 == hashlib.md5(fake.blobs["plan.json"]).hexdigest()


def test_an_apply_refuses_a_plan_other_than_the_recorded_one(tmp_path: Path) -> None:
    fake = FakeApi(blobs={"config.tar.gz": tarball({"main.tf": ""}), "plan.tfplan": b"a swapped plan"})
    spec = make_spec("apply", plan_file_md5=hashlib.md5(b"saved-plan").hexdigest(), plan_file_size=10)
    report, rec, _, _ = run_job(tmp_path, fake, spec)
    assert report.status == "errored" and "not the plan recorded" in str(report.error_message)
    assert "apply" not in [c[0] for c in calls(rec)] and fake.applying == []


def test_a_configuration_other_than_the_uploaded_one_is_not_run(tmp_path: Path) -> None:
    archive = tarball({"main.tf": ""})
    fake = FakeApi(blobs={"config.tar.gz": archive})
    spec = make_spec("plan", configuration_md5=hashlib.md5(b"another archive").hexdigest())
    report, rec, _, _ = run_job(tmp_path, fake, spec)
    assert report.status == "errored" and "configuration is not the one uploaded" in str(report.error_message)
    assert "plan" not in [c[0] for c in calls(rec)]
    ok, _, _, _ = run_job(tmp_path / "ok", fake, make_spec("plan", configuration_md5=hashlib.md5(archive).hexdigest()))
    assert ok.status == "finished", ok.error_message


def test_output_echo_can_be_turned_off_and_the_api_still_gets_every_line(tmp_path: Path) -> None:
    """On Fargate (`TERRACE_RUNNER_ECHO_OUTPUT=false`, infra/runner.py) job output reaches Terrace's log API only,
    never the runners' shared CloudWatch log group."""
    for echo, expect_echo in ((True, True), (False, False)):
        folder = tmp_path / str(echo)
        fake = FakeApi(blobs={"config.tar.gz": tarball({"main.tf": ""})})
        spec = make_spec("plan")
        fake.specs[spec.job_id] = spec
        api, transfers = fake.clients()
        config = runner_config(folder, fake_terraform(folder / "bin")).model_copy(update={"echo_output": echo})
        out = io.StringIO()
        report = JobExecutor(config, api, transfers, echo_to=out).execute(spec)
        assert report.status == "finished", report.error_message
        assert "Plan: 2 to add" in bytes(fake.logs[spec.job_id]).decode()
        assert ("Plan: 2 to add" in out.getvalue()) is expect_echo


MODULES_JSON = {
    "Modules": [
        {"Key": "", "Source": "", "Dir": "."},
        {"Key": "net", "Source": "terrace.test/acme/vpc/aws", "Version": "1.0.0", "Dir": ".terraform/modules/net"},
        {"Key": "db", "Source": "terrace.test/acme/db/aws//modules/pg", "Version": "2.0.0", "Dir": "x"},
        {"Key": "ok", "Source": "terrace.test/acme/fine/aws", "Version": "3.0.0", "Dir": "y"},
        {"Key": "pub", "Source": "registry.terraform.io/hashicorp/consul/aws", "Version": "0.1.0", "Dir": "z"},
    ]
}


def test_a_plan_warns_of_the_deprecated_and_revoked_private_module_versions_init_installed(tmp_path: Path) -> None:
    """As HCP Terraform's run output: each deprecated or revoked version of the deployment's private modules that
    init installed (`.terraform/modules/modules.json`) is a warning in the plan's log, read from the registry
    protocol with the run's token; a module of another registry is not asked about."""
    fake = FakeApi(blobs={"config.tar.gz": tarball({"main.tf": ""})})
    fake.registry = {
        "acme/vpc/aws": {
            "modules": [
                {
                    "versions": [
                        {"version": "1.0.0", "deprecation": {"reason": "use 2.x", "link": "https://example.com/2"}}
                    ]
                }
            ]
        },  # fmt: skip
        "acme/db/aws": {
            "modules": [
                {
                    "versions": [
                        {
                            "version": "2.0.0",
                            "deprecation": {"reason": "old", "link": ""},
                            "revocation": {"message": "CVE-1", "link": ""},
                        }
                    ]
                }
            ]
        },  # fmt: skip
        "acme/fine/aws": {"modules": [{"versions": [{"version": "3.0.0"}]}]},
    }
    written = json.dumps(MODULES_JSON).replace('"', '\\"')
    init = f'mkdir -p .terraform/modules && printf "%s" "{written}" > .terraform/modules/modules.json'
    spec = make_spec("plan")
    report, _, _, _ = run_job(tmp_path, fake, spec, init_body=init)

    assert report.status == "finished", report.error_message
    log = bytes(fake.logs[spec.job_id]).decode()
    assert "Warning: Deprecated module version" in log
    assert 'Module "net" uses version 1.0.0 of acme/vpc/aws, which its publisher deprecated: use 2.x' in log
    assert "More: https://example.com/2" in log
    assert "Warning: Revoked module version" in log and 'Module "db" uses version 2.0.0 of acme/db/aws' in log
    assert "fine" not in log and "consul" not in log
    assert sorted(fake.registry_asks) == ["acme/db/aws", "acme/fine/aws", "acme/vpc/aws"]
    assert log.index("Warning: Deprecated") < log.index("Plan: 2 to add")  # before the plan, as init's own


def test_module_records_the_job_wrote_reach_no_other_url() -> None:
    """`modules.json` is the job's writing: only a plain `org/name/provider` address and a version go into the
    registry read's URL."""
    from terrace.runner.module_notices import installed

    entries = [{"Key": k, "Source": f"terrace.test/{a}", "Version": v} for k, a, v in [
        ("up", "acme/../../runner/jobs", "1.0.0"), ("q", "acme/vpc/aws?x=1", "1.0.0"), ("v", "acme/vpc/aws", "1/../x"),
        ("ok", "acme/vpc/aws", "1.0.0")]]  # fmt: skip
    assert installed(json.dumps({"Modules": entries}).encode(), ["terrace.test"]) == [("ok", "acme/vpc/aws", "1.0.0")]
    assert installed(b"not json", ["terrace.test"]) == [] and installed(b"[1]", ["terrace.test"]) == []
