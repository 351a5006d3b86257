"""What the newest CLIs need of a run: `-invoke` (actions), `-parallelism` from `TFE_PARALLELISM`, and the `TFC_*`
variables HCP sets in every run's environment; a fake terraform records what it was given."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from runner_fakes import FakeApi, fake_terraform, make_spec, runner_config, tarball
from terrace.domain.jobs import Operation, RunVariable
from terrace.runner import commands
from terrace.runner.agent import TFC_AGENT_VERSION
from terrace.runner.execution import JobExecutor
from terrace.runner.rundir import RunSetupError, parallelism

INVOKE = Operation(invoke_action_addrs=["action.local_command.hello"])


def run_job(tmp_path: Path, spec, *, version: str = "1.15.9", **config):
    stored = {"config.tar.gz": tarball({"main.tf": ""})}
    fake = FakeApi(blobs=stored if spec.phase == "plan" else {**stored, "plan.tfplan": b"saved-plan"})
    script = fake_terraform(tmp_path / "bin", version=version)
    fake.specs[spec.job_id] = spec
    api, transfers = fake.clients()
    executor = JobExecutor(runner_config(tmp_path, script, **config), api, transfers, echo_to=io.StringIO())
    report = executor.execute(spec, keep_for_apply=False)
    return report, tmp_path / "bin", fake


def calls(rec: Path) -> list[list[str]]:
    return [(rec / f"call-{i}.args").read_text().splitlines() for i in range(len(list(rec.glob("call-*.args"))))]


def child_env(rec: Path, command: str) -> dict[str, str]:
    index = next(i for i, args in enumerate(calls(rec)) if args[0] == command)
    lines = (rec / f"call-{index}.env").read_text().splitlines()
    return dict(line.split("=", 1) for line in lines if "=" in line)


def test_invoke_reaches_the_plan_command_line(tmp_path: Path) -> None:
    report, rec, _ = run_job(tmp_path, make_spec("plan", operation=INVOKE))
    assert report.status == "finished", report.error_message
    plan = next(args for args in calls(rec) if args[0] == "plan")
    assert "-invoke=action.local_command.hello" in plan


@pytest.mark.parametrize("phase", ["plan", "apply"])
def test_a_terraform_older_than_1_14_errors_an_invoking_run_before_anything_runs(tmp_path: Path, phase: str) -> None:
    report, rec, fake = run_job(tmp_path, make_spec(phase, operation=INVOKE), version="1.0.3")
    assert report.status == "errored"
    assert "needs Terraform 1.14 or newer" in (report.error_message or "")
    assert "Terraform v1.0.3" in (report.error_message or "")
    assert [args[0] for args in calls(rec)] == ["version"]  # no init, no plan, no apply
    assert not fake.applying


def test_opentofu_cannot_invoke_actions() -> None:
    tofu = commands.Binary(path="/x/tofu", version="1.9.4", product="OpenTofu")
    with pytest.raises(RunSetupError, match="needs Terraform 1.14"):
        commands.check_invoke(INVOKE, tofu)
    commands.check_invoke(Operation(), tofu)  # a run that invokes nothing runs anywhere
    commands.check_invoke(INVOKE, commands.Binary(path="/x/terraform", version="1.14.0", product="Terraform"))
    with pytest.raises(RunSetupError):
        commands.check_invoke(INVOKE, commands.Binary(path="/x/terraform", version="", product="Terraform"))


def test_parallelism_reaches_plan_and_apply(tmp_path: Path) -> None:
    variables = [RunVariable(key="TFE_PARALLELISM", value="3", category="env")]
    report, rec, _ = run_job(tmp_path / "p", make_spec("plan", variables=variables))
    assert report.status == "finished", report.error_message
    assert "-parallelism=3" in next(args for args in calls(rec) if args[0] == "plan")
    report, rec, _ = run_job(tmp_path / "a", make_spec("apply", variables=variables))
    assert report.status == "finished", report.error_message
    apply = next(args for args in calls(rec) if args[0] == "apply")
    assert "-parallelism=3" in apply and apply[-1].endswith("plan.stored")


@pytest.mark.parametrize("value", ["0", "257", "ten", "-1", " ", "1.5"])
def test_parallelism_out_of_range_errors_the_run(tmp_path: Path, value: str) -> None:
    variables = [RunVariable(key="TFE_PARALLELISM", value=value, category="env")]
    report, rec, _ = run_job(tmp_path, make_spec("plan", variables=variables))
    assert report.status == "errored"
    assert "TFE_PARALLELISM must be a whole number from 1 to 256" in (report.error_message or "")
    assert [args[0] for args in calls(rec)] == ["version"]


def test_parallelism_bounds() -> None:
    assert parallelism([]) is None
    assert parallelism([RunVariable(key="TFE_PARALLELISM", value="1", category="env")]) == 1
    assert parallelism([RunVariable(key="TFE_PARALLELISM", value="256", category="env")]) == 256
    assert parallelism([RunVariable(key="TFE_PARALLELISM", value="0", category="terraform")]) is None


def test_the_child_sees_the_run_variables_hcp_sets(tmp_path: Path) -> None:
    spoof = RunVariable(key="TFC_RUN_ID", value="run-someone-else", category="env")
    spec = make_spec("plan", project_name="Platform", variables=[spoof])
    report, rec, _ = run_job(tmp_path, spec)
    assert report.status == "finished", report.error_message
    for command in ("init", "plan", "show"):
        env = child_env(rec, command)
        assert env["TFC_RUN_ID"] == "run-abc"  # a workspace variable cannot make a run pose as another
        assert env["TFC_WORKSPACE_NAME"] == "prod"
        assert env["TFC_WORKSPACE_SLUG"] == "acme/prod"
        assert env["TFC_PROJECT_NAME"] == "Platform"
        for suffix in ("BRANCH", "COMMIT_SHA", "TAG"):  # no VCS origin: set, empty
            assert env[f"TFC_CONFIGURATION_VERSION_GIT_{suffix}"] == ""
        assert "TFC_AGENT_VERSION" not in env  # Terrace's own runners are not agents


def test_an_agent_s_runs_see_its_version(tmp_path: Path) -> None:
    report, rec, _ = run_job(tmp_path, make_spec("plan"), agent_version=TFC_AGENT_VERSION)
    assert report.status == "finished", report.error_message
    assert child_env(rec, "plan")["TFC_AGENT_VERSION"] == TFC_AGENT_VERSION
    major, minor = (int(n) for n in TFC_AGENT_VERSION.split(".")[:2])
    assert (major, minor) >= (1, 10)  # terraform's cloud backend refuses import blocks on older agents


def test_a_plan_that_only_invokes_an_action_has_something_to_apply(tmp_path: Path) -> None:
    fake = FakeApi(blobs={"config.tar.gz": tarball({"main.tf": ""})})
    script = fake_terraform(
        tmp_path / "bin",
        version="1.14.0",
        plan_exit=0,
        show_json={"resource_changes": [], "action_invocations": [{"address": "action.local_command.hello"}]},
    )
    spec = make_spec("plan", operation=INVOKE)
    fake.specs[spec.job_id] = spec
    api, transfers = fake.clients()
    report = JobExecutor(runner_config(tmp_path, script), api, transfers, echo_to=io.StringIO()).execute(spec, False)
    assert report.status == "finished", report.error_message
    assert report.has_changes is True
