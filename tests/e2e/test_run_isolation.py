"""A malicious run in one organization leaves a `setsid` loop that tries to steal the secrets of the next run, in
another organization: it gets nothing; the two runs are worked by different runner processes, each bound to its
organization; and neither the victim's run token nor the attacker's runner token works on the victim's jobs."""

from __future__ import annotations

import dataclasses
import os
import shutil
import ssl
import stat
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from e2e_runs import RUN_TIMEOUT_S, remote_dir, remote_workspace, runs
from terrace.domain.errors import NotFound

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
    # the provisioner returns once the loop has gone round once (however loaded the machine), so that it is
    # the job's end, not the loop's slowness, that decides whether it outlives its job
    wait = f"for w in $(seq 600); do [ -s {loot}/listing ] && break; sleep 0.1; done"
    command = f"setsid bash -c '{loop}' </dev/null >/dev/null 2>&1 & {wait}"
    return f'resource "null_resource" "thief" {{\n  provisioner "local-exec" {{\n    command = {command!r}\n  }}\n}}\n'


def _runner_tokens(stack: Any, run_ids: list[str]) -> set[str]:
    """Ids of the runner tokens that worked the phases of these runs (recorded as `<runner>@<token id>`)."""
    found = set()
    for run_id in run_ids:
        run = stack.container.run_store.load(run_id)
        found |= {phase.runner_id.rsplit("@", 1)[1] for phase in (run.plan, run.apply) if phase.runner_id}
    return found


def _runner_environ(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return dict(item.decode().split("=", 1) for item in raw if b"=" in item)


def test_a_lingering_malicious_run_steals_nothing_from_the_next_run_of_another_organization(
    run_local_stack, run_stack, run_api, run_terraform, unique
):
    # Outside pytest's 0700 base, in a folder that is not world-writable: the runner removes what a job uid left in
    # the shared temporary folders and the world-writable folders in them (`sandbox.sweep_temp`).
    loot_base = run_local_stack.state_dir.parent / f"{run_local_stack.state_dir.name}-loot"
    loot_base.mkdir(mode=0o711, exist_ok=True)
    loot = loot_base / "loot"
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
    launcher = run_local_stack.launcher
    attacker_runner_codes = {  # as root reads them: a runner's environment holds its spent enrollment code only
        _runner_environ(r.process.pid)["TERRACE_RUNNER_ENROLLMENT_CODE"]
        for r in launcher.runners
        if r.organization == run_stack.organization and r.process.poll() is None
    }
    assert attacker_runner_codes
    assert not any("TERRACE_RUNNER_TOKEN" in _runner_environ(r.process.pid) for r in launcher.runners)

    victim_org = unique("victim-org")
    run_api.request(
        "POST",
        "/api/v2/organizations",
        {"data": {"type": "organizations", "attributes": {"name": victim_org, "email": "v@example.com"}}},
        expect=201,
    )
    victim_stack = dataclasses.replace(run_stack, organization=victim_org)
    victim_api = type(run_api)(victim_stack)
    victim = unique("victim")
    ws_id = remote_workspace(victim_api, victim)
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
        victim_stack,
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
    # each organization's runs were worked by its own runner processes, bound to it by their tokens
    org_of_token = {runner.token_id: runner.organization for runner in launcher.started}
    attacker_runs = [r["id"] for r in runs(run_api, run_api.workspace(attacker)["id"])]
    victim_runs = [r["id"] for r in runs(victim_api, ws_id)]
    attacker_tokens, victim_tokens = (
        _runner_tokens(run_local_stack, attacker_runs),
        _runner_tokens(run_local_stack, victim_runs),
    )
    assert attacker_tokens and victim_tokens and not attacker_tokens & victim_tokens
    assert {org_of_token[t] for t in attacker_tokens} == {run_stack.organization}
    assert {org_of_token[t] for t in victim_tokens} == {victim_org}
    victim_runner_codes = {
        _runner_environ(r.process.pid)["TERRACE_RUNNER_ENROLLMENT_CODE"]
        for r in launcher.runners
        if r.organization == victim_org and r.process.poll() is None
    }

    settings = run_local_stack.settings
    secrets = [env_secret, tf_secret, settings.url_signing_secret, *victim_runner_codes, *attacker_runner_codes]
    for secret in secrets:
        assert secret and secret.encode() not in stolen
    assert b"dev.json" not in stolen or run_local_stack.info.token.encode() not in stolen
    # job folders are removed; what may be left are plan folders a runner holds for their run's apply (other tests'
    # runs awaiting confirmation: runner/plan_cache.py), owned by the runner and closed to every job uid
    # each runner works in a folder of its own (runner-work/<token id>), root-owned and not listable by job uids
    for runner_dir in work_dir.iterdir():
        info = runner_dir.stat()
        assert (info.st_uid, stat.S_IMODE(info.st_mode)) == (os.getuid(), 0o711), f"{runner_dir.name} is open"
        for left in runner_dir.iterdir():
            info = left.stat()
            assert (info.st_uid, stat.S_IMODE(info.st_mode)) == (os.getuid(), 0o700), f"{left.name} was left open"

    # the victim's run tokens died with their phases
    victim_run = run_local_stack.container.run_store.load(victim_runs[-1])
    for token_id in victim_run.token_ids:
        with pytest.raises(NotFound):
            run_local_stack.container.accounts.get_token(token_id)
    # had the attacker learnt its own runner's token (a runner token of its organization), the victim's jobs would not
    # exist for it
    for attacker_runner_token in [run_local_stack.container.runner_credentials.runner_token(run_stack.organization)]:
        runner_api = httpx.Client(
            base_url=f"{run_stack.url}/api/runner",
            verify=ssl.create_default_context(cafile=run_stack.ca_bundle),
            headers={"Authorization": f"Bearer {attacker_runner_token}"},
            timeout=30,
        )
        with runner_api:
            for phase in (victim_run.plan, victim_run.apply):
                beat = runner_api.post(f"/jobs/{phase.id}/heartbeat", json={"runner_id": "thief"})
                done = runner_api.post(f"/jobs/{phase.id}/finish", json={"runner_id": "thief", "status": "errored"})
                assert (beat.status_code, done.status_code) == (404, 404)
            assert runner_api.post("/jobs/next", json={"runner_id": "thief"}).status_code == 204
            org = runner_api.get(f"{run_stack.url}/api/v2/organizations/{victim_org}")
            assert org.status_code == 404
    victim_api.http.close()
    shutil.rmtree(loot_base)
