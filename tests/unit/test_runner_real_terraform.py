"""A plan job then an apply job with the real terraform 1.0.3 and the null provider (local backend override)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from real_terraform import MISSING, TERRAFORM, offline_null
from runner_fakes import FakeApi, make_spec, runner_config, tarball
from terrace.domain.jobs import RunVariable
from terrace.runner.execution import JobExecutor

pytestmark = pytest.mark.skipif(MISSING, reason="terraform 1.0.3 / null provider not installed")

MAIN_TF = """
variable "names" { type = list(string) }
variable "greeting" { type = string }
resource "null_resource" "n" {
  count    = length(var.names)
  triggers = { name = var.names[count.index] }
}
output "greeting" { value = var.greeting }
"""


@pytest.mark.parametrize("same_runner", [True, False], ids=["same-runner-reuses-the-plan-folder", "fresh-runner"])
def test_plan_then_apply_with_real_terraform(tmp_path: Path, same_runner: bool) -> None:
    operator, state, local_backend = offline_null(tmp_path)

    variables = [
        RunVariable(key="names", value='["a", "b"]', category="terraform", hcl=True),
        RunVariable(key="greeting", value="hello ${not-interpolated}", category="terraform"),
    ]
    fake = FakeApi(blobs={"config.tar.gz": tarball({"main.tf": MAIN_TF})})
    api, transfers = fake.clients()
    # A deep work dir: the provider's unix socket must not land in it (past 107 bytes the provider dies, the
    # fate of this test under xdist's longer folders: "Plugin reinitialization required").
    deep = tmp_path / ("a-deep-work-dir-" * 5) / "work"
    config = runner_config(
        tmp_path, TERRAFORM, operator_cli_config=operator, tf_binaries={"1.0.3": str(TERRAFORM)}, work_dir=deep
    )
    executor = JobExecutor(config, api, transfers, backend_override=local_backend, echo_to=io.StringIO())

    plan = executor.execute(make_spec("plan", variables=variables, terraform_version="1.0.3", heartbeat_interval_s=5))
    plan_log = bytes(fake.logs["plan-abc"]).decode()
    assert plan.status == "finished", plan_log
    assert plan.has_changes and plan.resource_additions == 2
    assert "Plan: 2 to add, 0 to change, 0 to destroy." in plan_log
    assert json.loads(fake.blobs["plan.json"])["format_version"]
    assert fake.blobs["plan.tfplan"][:2] == b"PK"  # a plan file is a zip

    if not same_runner:  # the planning runner is gone: a fresh one applies from a fresh folder
        executor.close()
        config = runner_config(tmp_path, TERRAFORM, operator_cli_config=operator, work_dir=tmp_path / "other")
        executor = JobExecutor(config, api, transfers, backend_override=local_backend, echo_to=io.StringIO())
    apply = executor.execute(make_spec("apply", variables=variables, heartbeat_interval_s=5))
    apply_log = bytes(fake.logs["apply-abc"]).decode()
    assert apply.status == "finished", apply_log
    assert ("Initializing plugins and modules..." in apply_log) is not same_runner
    assert ("Reusing the plan's working directory" in apply_log) is same_runner
    assert list(config.work_dir.iterdir()) == []
    assert apply_log.splitlines()[0] == "Terraform v1.0.3"
    assert (apply.resource_additions, apply.resource_destructions) == (2, 0)
    saved = json.loads(state.read_text())
    assert saved["outputs"]["greeting"]["value"] == "hello ${not-interpolated}"
    assert len(saved["resources"][0]["instances"]) == 2
