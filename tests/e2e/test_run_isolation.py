"""A malicious run leaves a `setsid` loop that tries to steal the next run's secrets: it gets nothing."""

from __future__ import annotations

import os
import shutil
import time
import uuid
from pathlib import Path

import pytest
from e2e_runs import RUN_TIMEOUT_S, remote_dir, remote_workspace

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="per-job uids need the runner to run as root")


def _cmdlines() -> list[str]:
    found = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                found.append(Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode())
            except OSError:
                continue
    return found


def _thief(loot: Path, work_dir: Path, state_dir: Path, marker: str) -> str:
    loop = (
        f"for i in $(seq 120); do "
        f"cat /proc/*/environ /proc/*/cmdline >> {loot}/proc 2>/dev/null; "
        f"ls -laR {work_dir} >> {loot}/listing 2>&1; cp -r {work_dir}/. {loot}/work/ 2>/dev/null; "
        f"find {work_dir} {state_dir} /tmp \\( -name \\*.tfvars -o -name terraform.rc -o -name dev.json \\) "
        f"2>/dev/null "
        f"| xargs cat >> {loot}/files 2>/dev/null; cp -r {state_dir}/. {loot}/state/ 2>/dev/null; "
        f"sleep 0.25; done # {marker}"
    )
    command = f"setsid bash -c '{loop}' </dev/null >/dev/null 2>&1 &"
    return f'resource "null_resource" "thief" {{\n  provisioner "local-exec" {{\n    command = {command!r}\n  }}\n}}\n'


def test_a_lingering_malicious_run_steals_nothing_from_the_next_run(
    run_local_stack, run_stack, run_api, run_terraform, unique
):
    loot = run_local_stack.state_dir.parent / f"{run_local_stack.state_dir.name}-loot"  # outside pytest's 0700 base
    for sub in ("", "work", "state"):
        (loot / sub).mkdir(parents=True, exist_ok=True)
        (loot / sub).chmod(0o1777)
    marker = f"terrace-thief-{uuid.uuid4().hex[:8]}"
    state_dir = run_local_stack.state_dir
    work_dir = state_dir / "runner-work"
    body = _thief(loot, work_dir, state_dir, marker)
    attacker = unique("thief")
    remote_workspace(run_api, attacker)
    tf = remote_dir(run_stack, run_terraform, attacker, body, name="attacker")
    assert "Apply complete!" in tf.apply(timeout=RUN_TIMEOUT_S).output

    victim = unique("victim")
    ws_id = remote_workspace(run_api, victim)
    env_secret, tf_secret = f"envsecret-{uuid.uuid4().hex}", f"tfsecret-{uuid.uuid4().hex}"
    for key, value, category in (("VICTIM_TOKEN", env_secret, "env"), ("victim_password", tf_secret, "terraform")):
        run_api.request(
            "POST",
            f"/api/v2/workspaces/{ws_id}/vars",
            {
                "data": {
                    "type": "vars",
                    "attributes": {"key": key, "value": value, "category": category, "sensitive": True},
                }
            },
            expect=201,
        )
    victim_tf = remote_dir(
        run_stack,
        run_terraform,
        victim,
        'variable "victim_password" {\n  sensitive = true\n}\nresource "null_resource" "v" {\n'
        "  triggers = { p = sha256(var.victim_password) }\n"
        '  provisioner "local-exec" {\n    command = "sleep 2"\n  }\n}\n',
    )
    assert "Apply complete!" in victim_tf.apply(timeout=RUN_TIMEOUT_S).output
    time.sleep(3)  # the loop, were it alive, would have gone round a few more times

    assert not [c for c in _cmdlines() if marker in c], "the malicious run's background loop is still alive"
    assert (loot / "listing").exists(), "the malicious loop never ran"
    stolen = b"".join(p.read_bytes() for p in loot.rglob("*") if p.is_file())
    settings = run_local_stack.settings
    for secret in (env_secret, tf_secret, settings.runner_secret, settings.url_signing_secret):
        assert secret and secret.encode() not in stolen
    assert b"dev.json" not in stolen or run_local_stack.info.token.encode() not in stolen
    assert list(work_dir.iterdir()) == [], "job directories are removed"
    shutil.rmtree(loot)
