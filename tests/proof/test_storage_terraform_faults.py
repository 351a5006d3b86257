"""Terraform 1.0.3 itself (the http backend, its own retries) applying while the table and the blob store fail or
slow down, on the embedded server.

Proves: each `terraform apply` either succeeds, and its state is then the current version (byte-identical to its
md5, the same document `terraform state pull` reads), or fails with the server's clear error in its output (never a
500); after a failed one the user's next apply (once the window closed, the lock force-released as
`terraform force-unlock` would) succeeds; every listed version's bytes match its md5.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from conftest import sized
from fault_ports import FaultWindow, wrapper
from proof_stack import Client, check_states, md5_hex, running_stack
from terrace.local import terraform_config

pytestmark = [pytest.mark.proof, pytest.mark.timeout(sized(300, 1800))]
TERRAFORM = Path(sys.executable).parent / "terraform"


def _backend(url: str, token: str) -> str:
    return (
        'terraform {\n  backend "http" {\n'
        f'    address = "{url}"\n    lock_address = "{url}"\n    unlock_address = "{url}"\n'
        f'    username = "terraform"\n    password = "{token}"\n'
        "    retry_max = 6\n    retry_wait_min = 1\n    retry_wait_max = 2\n  }\n}\n"
    )


def test_terraform_applies_through_storage_faults(proof_rng: random.Random, tmp_path: Path) -> None:
    if sized(0, 1) == 0:
        pytest.skip("terraform through storage faults in make proof only (TERRACE_PROOF=full): make test's budget")
    assert TERRAFORM.exists(), f"the terraform test client is not installed at {TERRAFORM}"
    window = FaultWindow(random.Random(proof_rng.getrandbits(64)), "embedded", error_rate=0.1, delay_rate=0.2)
    with running_stack("embedded", tmp_path / "stack", wrap_ports=wrapper(window)) as stack:
        assert stack.info is not None
        client = Client(stack)
        try:
            name = f"tf-{uuid.uuid4().hex[:6]}"
            workspace_id = client.create_workspace(name)
            work = tmp_path / "work"
            work.mkdir()
            home = tmp_path / "home"
            home.mkdir()
            env = terraform_config.terraform_env(stack.info.cli_config, stack.info.ca_bundle, home)

            def terraform(*args: str) -> subprocess.CompletedProcess[str]:
                return subprocess.run(
                    [str(TERRAFORM), *args, "-no-color"], cwd=work, env=env, capture_output=True, text=True, timeout=240
                )

            url = f"{stack.info.url}/state/v1/{client.org}/{name}"
            outcomes = {"applied": 0, "failed": 0}
            for n in range(1, sized(0, 25) + 1):
                (work / "main.tf").write_text(_backend(url, stack.info.token) + f'output "n" {{\n  value = {n}\n}}\n')
                if n == 1:
                    assert terraform("init", "-input=false").returncode == 0
                window.error_rate = proof_rng.choice([0.05, 0.1, 0.2])
                window.start()
                try:
                    applied = terraform("apply", "-auto-approve", "-input=false")
                finally:
                    window.stop()
                if applied.returncode != 0:
                    outcomes["failed"] += 1
                    output = applied.stdout + applied.stderr
                    assert "500" not in output or "internal error" not in output, output
                    client.force_unlock(workspace_id)  # terraform force-unlock
                    applied = terraform("apply", "-auto-approve", "-input=false")
                    read = client.call("GET", f"/state/v1/{client.org}/{name}")
                    assert applied.returncode == 0, f"{applied.stdout}{applied.stderr}\nGET: {read.text[:500]}"
                else:
                    outcomes["applied"] += 1
                pulled = terraform("state", "pull")
                assert pulled.returncode == 0
                current = client.api("GET", f"/api/v2/workspaces/{workspace_id}/current-state-version").json()["data"]
                stored = client.download(current["attributes"]["hosted-state-download-url"])
                assert md5_hex(stored.content) == current["attributes"]["md5"]
                assert json.loads(stored.content) == json.loads(pulled.stdout), "terraform sees another state"
                outputs = client.api("GET", f"/api/v2/state-versions/{current['id']}/outputs").json()["data"]
                assert [o["attributes"]["value"] for o in outputs] == [n]
            checked = check_states(client, workspace_id, {})
            print(
                f"\nterraform: {outcomes} {checked} faults={sum(window.seen.values())} statuses={dict(client.statuses)}"
            )
        finally:
            client.close()
