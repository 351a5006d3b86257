"""OpenTofu's `cloud` backend picks up `X-Terraform-Snapshot-Interval` from Terrace's state-version responses.

(Terraform 1.0.3 has no `cloud` block and its `remote` backend never reads the header; newer `remote`
backends do not read it either: they snapshot on their own 20 s rule.)"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e
TOFU = Path(os.environ.get("TERRACE_TEST_TOFU", "/work/shared/tools/opentofu/tofu"))


@pytest.mark.skipif(not TOFU.exists(), reason="OpenTofu is not installed")
def test_opentofu_cloud_backend_enables_intermediate_snapshots(stack, terraform_env, tmp_path, unique):
    name = unique("snap")
    work = tmp_path / "work"
    work.mkdir()
    (work / "main.tf").write_text(
        "terraform {\n  cloud {\n"
        f'    hostname     = "{stack.hostname}"\n    organization = "{stack.organization}"\n'
        f'    workspaces {{\n      name = "{name}"\n    }}\n  }}\n}}\n'
        'output "greeting" {\n  value = "hello"\n}\n'
    )
    env = {**terraform_env, "TF_LOG": "trace", "TF_IN_AUTOMATION": "1"}

    def tofu(*args: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run([str(TOFU), *args], cwd=work, env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stdout + done.stderr[-6000:]
        return done

    tofu("init", "-input=false", "-no-color")
    applied = tofu("apply", "-auto-approve", "-input=false", "-no-color")

    # every JSON:API state response set it (the PUT to the presigned upload URL is skipped: not JSON:API)
    settings = [line.rsplit(" ", 1)[1] for line in applied.stderr.splitlines() if "interval is set by header" in line]
    assert settings and set(settings) == {"5m0s"}, settings
