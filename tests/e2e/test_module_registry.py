"""The private module registry with real clients: a module version published through the API (the tarball PUT to
its upload URL, as go-tfe's `UploadTarGzip` does), then `terraform init` (1.0.3, a current terraform, OpenTofu)
with `source = "127.0.0.1:<port>/<org>/<name>/<provider>"` and a version constraint downloads the newest matching
version through the module registry protocol, and a local `apply` runs it."""

from __future__ import annotations

import io
import json
import os
import ssl
import subprocess
import tarfile
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import TERRAFORM, client_env
from e2e_runs import RUN_TIMEOUT_S, remote_dir, remote_workspace, runs, wait_final, wait_for
from test_run_trigger_chain import _upload as upload_configuration

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]

TERRAFORM_111 = Path(os.environ.get("TERRACE_TEST_TERRAFORM_CLOUD", "/usr/local/bin/terraform"))
TOFU = Path(os.environ.get("TERRACE_TEST_TOFU", "/work/shared/tools/opentofu/tofu"))
CLIENTS = [
    pytest.param(binary, id=name, marks=pytest.mark.skipif(not binary.exists(), reason=f"{name} is not installed"))
    for name, binary in (("terraform-1.0.3", TERRAFORM), ("terraform-1.11", TERRAFORM_111), ("tofu", TOFU))
]

MODULE = """
variable "name" {
  type = string
}
output "greeting" {
  value = "hello ${var.name} from VERSION"
}
"""


def _tarball(version: str) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, text in (("main.tf", MODULE.replace("VERSION", version)), ("README.md", f"# greeter {version}\n")):
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def _publish(run_api: Any, org: str, name: str, version: str) -> bytes:
    body = {"data": {"type": "registry-module-versions", "attributes": {"version": version}}}
    created = run_api.request("POST", f"/api/v2/registry-modules/{org}/{name}/greeter/versions", body, expect=201)
    upload = created.json()["data"]["links"]["upload"]
    data = _tarball(version)
    put = run_api.http.put(upload, content=data, headers={"Content-Type": "application/octet-stream"})
    assert put.status_code == 200, put.text
    path = f"/api/v2/organizations/{org}/registry-modules/private/{org}/{name}/greeter/version?module_version={version}"

    def landed() -> dict[str, Any] | None:
        read: dict[str, Any] = run_api.request("GET", path).json()["data"]
        return read if read["attributes"]["status"] != "pending" else None

    # embedded: the blob server hands the landing over in its PUT; on moto, S3's notification reaches the worker
    read = wait_for(landed, 60, what=f"{name} {version} to be read")
    assert read["attributes"]["status"] == "ok", read
    return data


@pytest.mark.parametrize("binary", CLIENTS)
def test_init_downloads_a_published_module_by_constraint_and_apply_uses_it(
    binary, run_stack, run_api, unique, tmp_path, tmp_path_factory
):
    org, name = run_stack.organization, unique("greet")
    body = {"data": {"type": "registry-modules", "attributes": {"name": name, "provider": "greeter"}}}
    run_api.request("POST", f"/api/v2/organizations/{org}/registry-modules", body, expect=201)
    for version in ("1.0.0", "1.4.0", "2.0.0"):
        _publish(run_api, org, name, version)

    assert "." in run_stack.registry_hostname.split(":")[0]
    source = f"{run_stack.registry_hostname}/{org}/{name}/greeter"
    (tmp_path / "main.tf").write_text(
        f'module "greeter" {{\n  source  = "{source}"\n  version = "~> 1.0"\n  name    = "world"\n}}\n'
        'output "greeting" {\n  value = module.greeter.greeting\n}\n'
    )
    env = client_env(run_stack, tmp_path_factory.mktemp("home"))

    def run(*args: str) -> str:
        done = subprocess.run([str(binary), *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, f"{binary} {' '.join(args)} -> {done.returncode}\n{done.stdout}{done.stderr}"
        return done.stdout

    init = run("init", "-input=false", "-no-color")
    assert "1.4.0" in init, init  # the newest version the constraint allows, not 2.0.0
    run("apply", "-auto-approve", "-input=false", "-no-color")
    outputs = json.loads(run("output", "-json"))
    assert outputs["greeting"]["value"] == "hello world from 1.4.0"


def test_the_protocol_answers_members_only(run_stack, run_api, unique):
    org, name = run_stack.organization, unique("hidden")
    body = {"data": {"type": "registry-modules", "attributes": {"name": name, "provider": "greeter"}}}
    run_api.request("POST", f"/api/v2/organizations/{org}/registry-modules", body, expect=201)
    published = _publish(run_api, org, name, "0.1.0")
    url = f"https://{run_stack.registry_hostname}/api/registry/v1/modules/{org}/{name}/greeter/0.1.0/download"
    with httpx.Client(verify=ssl.create_default_context(cafile=run_stack.ca_bundle)) as http:
        assert http.get(url).status_code == 401
        got = http.get(url, headers={"Authorization": f"Bearer {run_stack.token}"})
        assert got.status_code == 204
        tarball = http.get(got.headers["X-Terraform-Get"])
        assert tarball.status_code == 200 and tarball.content == published


def test_a_remote_run_installs_a_private_module_with_its_own_token(run_stack, run_api, unique):
    """The configuration is uploaded through the API (no `.terraform/modules` in it): the runner's `terraform init`
    downloads the module from the registry with the run's token, and the apply uses it; the explorer then names
    the module call among the workspace's."""
    org, name = run_stack.organization, unique("remote")
    body = {"data": {"type": "registry-modules", "attributes": {"name": name, "provider": "greeter"}}}
    run_api.request("POST", f"/api/v2/organizations/{org}/registry-modules", body, expect=201)
    _publish(run_api, org, name, "3.1.0")
    ws_id = remote_workspace(run_api, unique("mods"))
    main_tf = (
        f'module "greeter" {{\n  source  = "{run_stack.registry_hostname}/{org}/{name}/greeter"\n'
        '  version = ">= 3.0"\n  name    = "remote"\n}\n'
        'output "greeting" {\n  value = module.greeter.greeting\n}\n'
    )
    cv_id = upload_configuration(run_api, run_stack, ws_id, main_tf)
    body = {"data": {"type": "runs", "attributes": {"auto-apply": True}, "relationships": {
        "workspace": {"data": {"type": "workspaces", "id": ws_id}},
        "configuration-version": {"data": {"type": "configuration-versions", "id": cv_id}}}}}  # fmt: skip
    run_id = run_api.request("POST", "/api/v2/runs", body, expect=201).json()["data"]["id"]
    final = wait_final(run_api, run_id, timeout=RUN_TIMEOUT_S)
    assert final["attributes"]["status"] == "applied", final
    outputs = run_api.request("GET", f"/api/v2/workspaces/{ws_id}/current-state-version?include=outputs").json()
    values = {o["attributes"]["name"]: o["attributes"]["value"] for o in outputs.get("included", [])}
    assert values == {"greeting": "hello remote from 3.1.0"}

    # the explorer learns the applied configuration's module call (the events worker, once the run ended)
    def found() -> list[dict[str, Any]]:
        query = f"type=modules&filter[0][name][is][0]={name}"
        rows = run_api.request("GET", f"/api/v2/organizations/{org}/explorer?{query}").json()["data"]
        return [r["attributes"] for r in rows]

    [module] = wait_for(found, timeout=60, what="the explorer's module row")
    # the version the runner's init installed (its plan reported it), not the constraint `>= 3.0`
    assert (module["version"], module["workspace-count"], module["registry-type"]) == ("3.1.0", 1, "private")
    assert module["source"] == f"{run_stack.registry_hostname}/{org}/{name}/greeter"


def test_a_cli_driven_run_s_explorer_version_is_the_one_its_runner_installed(run_stack, run_api, run_terraform, unique):
    """`terraform apply` through the `remote` backend from a folder whose `.terraformignore` leaves `.terraform/`
    out of the upload (as an API-driven or VCS-driven configuration never has it): the call's constraint is
    `~> 1.0`, the runner's `terraform init` installs 1.2.0 and reports it with the plan, and the explorer answers
    1.2.0 (the constraint beside it), not the constraint's 1.0.0."""
    org, name = run_stack.organization, unique("cli")
    body = {"data": {"type": "registry-modules", "attributes": {"name": name, "provider": "greeter"}}}
    run_api.request("POST", f"/api/v2/organizations/{org}/registry-modules", body, expect=201)
    _publish(run_api, org, name, "1.2.0")
    workspace = unique("climods")
    ws_id = remote_workspace(run_api, workspace)
    source = f"{run_stack.registry_hostname}/{org}/{name}/greeter"
    main_tf = (f'module "greeter" {{\n  source  = "{source}"\n  version = "~> 1.0"\n  name    = "cli"\n}}\n'
               'output "greeting" {\n  value = module.greeter.greeting\n}\n')  # fmt: skip
    tf = remote_dir(run_stack, run_terraform, workspace, main_tf)
    (tf.path / ".terraformignore").write_text(".terraform/\n")
    tf.apply(timeout=RUN_TIMEOUT_S)
    [run] = runs(run_api, ws_id)
    assert run["attributes"]["status"] == "applied", run

    def found() -> dict[str, Any] | None:
        query = f"type=workspaces&filter[0][workspace_name][is][0]={workspace}&fields=modules"
        rows = run_api.request("GET", f"/api/v2/organizations/{org}/explorer?{query}").json()["data"]
        return rows[0]["attributes"] if rows and rows[0]["attributes"]["modules"] else None

    assert wait_for(found, timeout=60, what="the explorer's workspace row")["modules"] == f"{source}:1.2.0"
    below = f"type=modules&filter[0][source][is][0]={source}&filter[1][version][lt][0]=1.1.0"
    assert run_api.request("GET", f"/api/v2/organizations/{org}/explorer?{below}").json()["data"] == []
