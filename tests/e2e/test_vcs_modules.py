"""A registry module published from a repository, end to end: a module connected through the API
(`POST /organizations/:org/registry-modules/vcs`) to a repository of the forge twin (real git over smart HTTP, every
REST call and payload checked against GitHub's published descriptions) named `terraform-<provider>-<name>`; a pushed
tag `v1.2.0` and its signed delivery publish version 1.2.0 from the tag's files on the embedded stack, and terraform
1.11 then installs that version through the module registry protocol and applies it."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import client_env
from e2e_runs import wait_for
from forge_twin import ForgeTwin
from git_forge import ZERO, git
from github_contract import missing
from test_module_registry import MODULE, TERRAFORM_111

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

TOKEN = "ghp_e2e_module_publisher"


def test_a_pushed_tag_publishes_a_version_that_terraform_installs(
    run_stack: Any, run_api: Any, unique: Any, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    if reason := missing():
        pytest.skip(reason)
    if shutil.which("git") is None or not TERRAFORM_111.exists():
        pytest.skip(f"git or terraform 1.11 ({TERRAFORM_111}) is not installed")
    org, name = run_stack.organization, unique("vcsmod")
    repo = f"octo/terraform-greeter-{name}"
    with ForgeTwin(tmp_path_factory.mktemp("forge"), TOKEN, ca_bundle=run_stack.ca_bundle) as twin:
        work = twin.create(repo)
        twin.commit_and_push(work, {"main.tf": MODULE.replace("VERSION", "the tag"), "README.md": "# greeter\n"}, "m")
        client = {"data": {"type": "oauth-clients", "attributes": {
            "service-provider": "github_enterprise", "http-url": twin.http_url, "api-url": twin.api_url,
            "oauth-token-string": TOKEN}}}  # fmt: skip
        created = run_api.request("POST", f"/api/v2/organizations/{org}/oauth-clients", client, 201)
        token_id = created.json()["data"]["relationships"]["oauth-tokens"]["data"][0]["id"]
        body = {"data": {"type": "registry-modules", "attributes": {"vcs-repo": {
            "identifier": repo, "oauth-token-id": token_id, "display-identifier": repo}}}}  # fmt: skip
        module = run_api.request("POST", f"/api/v2/organizations/{org}/registry-modules/vcs", body, 201).json()
        assert module["data"]["attributes"]["name"] == name and module["data"]["attributes"]["provider"] == "greeter"
        assert len(twin.repos[repo].hooks) == 1

        git("tag", "v1.2.0", cwd=work)
        git("push", "--quiet", "origin", "v1.2.0", cwd=work)
        sha = twin._rev(twin.repos[repo], "refs/tags/v1.2.0")
        answers = twin.deliver(repo, "push", twin.push_payload(repo, "refs/tags/v1.2.0", ZERO, sha))
        assert [a.status_code for a in answers] == [202]
        path = f"/api/v2/organizations/{org}/registry-modules/private/{org}/{name}/greeter"

        def published() -> dict[str, str] | None:
            statuses = run_api.request("GET", path).json()["data"]["attributes"]["version-statuses"]
            return statuses[0] if statuses and statuses[0]["status"] != "pending" else None

        assert wait_for(published, 60, what="version 1.2.0 from the tag")["status"] == "ok"
        source = f"{run_stack.registry_hostname}/{org}/{name}/greeter"
        (tmp_path / "main.tf").write_text(
            f'module "greeter" {{\n  source  = "{source}"\n  version = "~> 1.2"\n  name    = "world"\n}}\n'
            'output "greeting" {\n  value = module.greeter.greeting\n}\n'
        )
        env = client_env(run_stack, tmp_path_factory.mktemp("home"))
        assert "1.2.0" in _terraform(tmp_path, env, "init", "-input=false", "-no-color")
        _terraform(tmp_path, env, "apply", "-auto-approve", "-input=false", "-no-color")
        outputs = json.loads(_terraform(tmp_path, env, "output", "-json"))
        assert outputs["greeting"]["value"] == "hello world from the tag"
        run_api.request("DELETE", path, expect=204)
        assert twin.repos[repo].hooks == {} and twin.problems == []


def _terraform(cwd: Path, env: dict[str, str], *args: str) -> str:
    done = subprocess.run([str(TERRAFORM_111), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"terraform {' '.join(args)} -> {done.returncode}\n{done.stdout}{done.stderr}"
    return done.stdout
