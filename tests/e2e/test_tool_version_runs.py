"""Every workspace runs the exact version it asks for, on one embedded deployment whose runners hold none: a run
pinned to 1.0.3 runs 1.0.3 and one pinned to `~> 1.11.0` runs the newest 1.11 (terraform's `~> 1.11` allows any
1.x from 1.11 on: the newest 1.x release of the catalog), each fetched from a local HTTPS
release mirror (real release zips of the binaries on this host, SHA256SUMS signed by a key made for the test and
trusted through TERRACE_TOOL_TRUSTED_KEYS), checked and cached in the deployment's folder. Two first runs of the
same version fetch it once; a version no one can fetch errors the run naming what is available. The configuration
pins `required_version` itself, so a plan under any other binary fails."""

from __future__ import annotations

import importlib.util
import io
import os
import shutil
import ssl
import subprocess
import sys
import tarfile
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from e2e_runs import remote_workspace, wait_final, wait_for
from job_uids import traversable
from release_mirror import ReleaseMirror
from terrace.domain import tool_versions as tv
from terrace.local import terraform_config, tls
from terrace.local.stack import LocalStack
from terrace.local.terraform_binary import unwrapped
from terrace.services.admin import tool_releases

pytestmark = pytest.mark.e2e

VENV_TERRAFORM = Path(unwrapped(str(Path(sys.prefix) / "bin" / "terraform")))  # terraform 1.0.3 (its wheel)
PATH_TERRAFORM = shutil.which("terraform", path=os.environ.get("PATH", "").replace(f"{Path(sys.prefix)}/bin", ""))


def _harness() -> Any:
    spec = importlib.util.spec_from_file_location("e2e_harness", Path(__file__).with_name("conftest.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("e2e_harness", module)
    spec.loader.exec_module(module)
    return module


_h = _harness()


def _path_version() -> str:
    from terrace.runner.commands import detect_version

    return detect_version(PATH_TERRAFORM) if PATH_TERRAFORM else ""


@pytest.fixture(scope="module")
def deployment() -> Iterator[tuple[LocalStack, ReleaseMirror, Any]]:
    newest = _path_version()
    newest_11 = tv.newest("~> 1.11.0", tool_releases.TERRAFORM)
    if not VENV_TERRAFORM.exists() or newest != newest_11:
        pytest.skip(f"needs terraform 1.0.3 (the project's install) and terraform {newest_11} on PATH")
    root = traversable(Path(tempfile.mkdtemp(prefix="terrace-e2e-tools-")))
    tls_files = tls.write_certificates(root / "tls")
    mirror = ReleaseMirror(root / "mirror", tls_files)
    mirror.add("terraform", "1.0.3", VENV_TERRAFORM)
    mirror.add("terraform", newest, Path(PATH_TERRAFORM or ""))
    mirror.add("terraform", "1.5.6", b"#!/bin/sh\n", tamper=True)  # not the archive the signed sums list
    mirror.add("terraform", "1.5.5", b"#!/bin/sh\n", stranger=True)  # sums signed by a key nobody trusts
    mirror.start()
    local = LocalStack(
        port=0, organization="tools", state_dir=root / "state", prefix=f"e2e-tools-{uuid.uuid4().hex[:8]}",
        data_dir=root / "state" / "data", tls_files=tls_files,
    )  # fmt: skip
    local.link_host_tools = False  # the runners hold no version: each is fetched
    local.settings_overrides = {
        **_h.RUN_SETTINGS,
        "tool_downloads": True,
        "tool_mirror_terraform": mirror.base("terraform"),
        "tool_trusted_keys": str(mirror.public_key),
    }
    local.start()
    assert local.info is not None
    api = _h.Api(_h.StackInfo(**local.info.as_dict()))
    try:
        yield local, mirror, api
    finally:
        api.http.close()
        local.stop()
        mirror.stop()
        shutil.rmtree(root, ignore_errors=True)


def _queue(api: Any, workspace_id: str, required: str) -> str:
    """Upload a configuration requiring `required` and queue a plan-only run of it: the run's id."""
    body = {"data": {"type": "configuration-versions", "attributes": {"auto-queue-runs": False, "speculative": True}}}
    cv = api.request("POST", f"/api/v2/workspaces/{workspace_id}/configuration-versions", body, expect=201).json()
    main_tf = f'terraform {{\n  required_version = "{required}"\n}}\n'.encode()
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        info = tarfile.TarInfo("main.tf")
        info.size = len(main_tf)
        tar.addfile(info, io.BytesIO(main_tf))
    with httpx.Client(verify=ssl.create_default_context(cafile=api.stack.ca_bundle), timeout=30) as blobs:
        assert blobs.put(cv["data"]["attributes"]["upload-url"], content=buffer.getvalue()).status_code < 300
    cv_id = cv["data"]["id"]
    wait_for(
        lambda: (
            api.request("GET", f"/api/v2/configuration-versions/{cv_id}").json()["data"]["attributes"]["status"]
            == "uploaded"
        ),
        what=f"{cv_id} uploaded",
    )
    run = {
        "data": {
            "type": "runs",
            "attributes": {"plan-only": True},
            "relationships": {
                "workspace": {"data": {"type": "workspaces", "id": workspace_id}},
                "configuration-version": {"data": {"type": "configuration-versions", "id": cv_id}},
            },
        }
    }
    return str(api.request("POST", "/api/v2/runs", run, expect=201).json()["data"]["id"])


def _plan_log(api: Any, run_id: str) -> str:
    url = api.request("GET", f"/api/v2/runs/{run_id}/plan").json()["data"]["attributes"]["log-read-url"]
    return str(api.http.get(url).text)


def _finished(api: Any, run_id: str) -> None:
    final = wait_final(api, run_id, timeout=180)
    assert final["attributes"]["status"] == "planned_and_finished", (final, _plan_log(api, run_id))


def test_two_first_runs_of_a_pinned_version_fetch_it_once(deployment: tuple[LocalStack, ReleaseMirror, Any]) -> None:
    local, mirror, api = deployment
    pinned = [remote_workspace(api, f"old-{n}", **{"terraform-version": "1.0.3"}) for n in range(2)]
    first_runs = [_queue(api, ws, "= 1.0.3") for ws in pinned]  # at once: two runners want 1.0.3
    for run_id in first_runs:
        _finished(api, run_id)
        assert api.request("GET", f"/api/v2/runs/{run_id}").json()["data"]["attributes"]["terraform-version"] == "1.0.3"
        assert "Terraform v1.0.3" in _plan_log(api, run_id)
    assert mirror.archive_fetches("terraform", "1.0.3") == 1  # one fetch for both runs
    assert (local.state_dir / "tools" / "terraform" / "1.0.3" / "terraform").is_file()  # cached in the deployment


def test_a_constraint_runs_the_newest_matching_release(deployment: tuple[LocalStack, ReleaseMirror, Any]) -> None:
    local, mirror, api = deployment
    newest = _path_version()
    current = remote_workspace(api, "current", **{"terraform-version": "~> 1.11.0"})
    run_id = _queue(api, current, f"= {newest}")
    _finished(api, run_id)
    assert api.request("GET", f"/api/v2/runs/{run_id}").json()["data"]["attributes"]["terraform-version"] == newest
    log = _plan_log(api, run_id)
    assert f"Terraform v{newest}" in log and f"terraform_{newest}_linux_amd64.zip" in log
    assert mirror.archive_fetches("terraform", newest) == 1


def test_a_version_nobody_can_fetch_errors_the_run(deployment: tuple[LocalStack, ReleaseMirror, Any]) -> None:
    local, mirror, api = deployment
    unknown = remote_workspace(api, "unknown", **{"terraform-version": "0.12.31"})
    run_id = _queue(api, unknown, "= 0.12.31")
    run = api.request("GET", f"/api/v2/runs/{run_id}").json()["data"]["attributes"]
    assert run["status"] == "errored"  # at once: no runner was asked
    assert "'0.12.31'" in run["error-message"] and "Terraform 1.0.0 to 1.0.11" in run["error-message"]

    absent = remote_workspace(api, "absent", **{"terraform-version": "1.5.7"})  # in the catalog, not the mirror
    final = wait_final(api, _queue(api, absent, "= 1.5.7"), timeout=120)
    assert final["attributes"]["status"] == "errored"
    assert "Terraform 1.5.7 could not be fetched" in _plan_log(api, final["id"])
    assert not (local.state_dir / "tools" / "terraform" / "1.5.7").exists()


def test_the_pinned_binary_itself_says_its_version(deployment: tuple[LocalStack, ReleaseMirror, Any]) -> None:
    """Not the runner's banner: terraform 1.0.3 itself, run in the job, refuses a configuration requiring another
    version and names its own (`terraform version`'s number) in the run's log."""
    local, mirror, api = deployment
    pinned = remote_workspace(api, "self", **{"terraform-version": "1.0.3"})
    final = wait_final(api, _queue(api, pinned, "= 1.11.4"), timeout=120)
    assert final["attributes"]["status"] == "errored"
    log = _plan_log(api, final["id"])
    assert "This configuration does not support Terraform version 1.0.3" in log, log


def test_a_workspace_its_cloud_block_creates_is_pinned_to_the_clients_version(
    deployment: tuple[LocalStack, ReleaseMirror, Any], tmp_path: Path
) -> None:
    """As HCP pins it: `terraform init` creates the workspace, then sets it to the client's version, a release of
    the catalog (the client on PATH is the newest 1.11, which the mirror holds)."""
    local, mirror, api = deployment
    info = api.stack
    (tmp_path / "main.tf").write_text(
        f'terraform {{\n  cloud {{\n    hostname = "{info.hostname}"\n    organization = "{info.organization}"\n'
        '    workspaces {\n      name = "by-init"\n    }\n  }\n}\n'
    )
    home = tmp_path / "home"
    home.mkdir()
    env = terraform_config.terraform_env(info.cli_config, info.ca_bundle, home)
    done = subprocess.run([PATH_TERRAFORM or "terraform", "init", "-input=false", "-no-color"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert api.workspace("by-init")["attributes"]["terraform-version"] == _path_version()


@pytest.mark.parametrize(
    ("version", "reason"),
    [
        ("1.5.6", "terraform_1.5.6_linux_amd64.zip has SHA-256 "),
        ("1.5.5", "the SHA256SUMS signature is not valid for any trusted key"),
    ],
)
def test_a_tampered_archive_or_a_bad_signature_errors_the_run_and_caches_nothing(
    deployment: tuple[LocalStack, ReleaseMirror, Any], version: str, reason: str
) -> None:
    local, mirror, api = deployment
    pinned = remote_workspace(api, f"refused-{version.replace('.', '-')}", **{"terraform-version": version})
    final = wait_final(api, _queue(api, pinned, f"= {version}"), timeout=120)
    assert final["attributes"]["status"] == "errored"
    log = _plan_log(api, final["id"])
    assert f"Terraform {version} could not be fetched" in log and reason in log, log
    assert not (local.state_dir / "tools" / "terraform" / version).exists()
    assert not [p for p in (local.state_dir / "tools").iterdir() if p.name.startswith(".fetch-") and p.is_dir()]
