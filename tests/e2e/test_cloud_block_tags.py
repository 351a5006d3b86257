"""The `cloud` block selects and creates workspaces by tags: Terraform >= 1.10 with key-value tags
(`tags = { key = "value" }`: `filter[tagged]`, `tag-bindings`), terraform 1.15 with tags its workspaces inherit
from their project, OpenTofu 1.9 with a list of tags (`search[tags]`, `relationships/tags`). Workspaces run
locally here (the e2e organization's default)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from tf115_stack import TERRAFORM_115

pytestmark = pytest.mark.e2e
TERRAFORM_111 = Path(os.environ.get("TERRACE_TEST_TERRAFORM_111", "/usr/local/bin/terraform"))
TOFU = Path(os.environ.get("TERRACE_TEST_TOFU", "/work/shared/tools/opentofu/tofu"))


def _client(binary: Path, work: Path, env: dict[str, str]) -> Any:
    def run(*args: str, extra_env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [str(binary), *args],
            cwd=work,
            env={**env, "TF_IN_AUTOMATION": "1", **(extra_env or {})},
            capture_output=True,
            text=True,
            timeout=180,
        )
        assert done.returncode == 0, f"{binary.name} {' '.join(args)}:\n{done.stdout}\n{done.stderr[-4000:]}"
        return done

    return run


def _main_tf(stack: Any, tags: str) -> str:
    return (
        "terraform {\n  cloud {\n"
        f'    hostname     = "{stack.hostname}"\n    organization = "{stack.organization}"\n'
        f"    workspaces {{\n      tags = {tags}\n    }}\n  }}\n}}\n"
        'output "greeting" {\n  value = "hello"\n}\n'
    )


def _bindings(api: Any, ws_id: str) -> set[tuple[str, str]]:
    data = api.request("GET", f"/api/v2/workspaces/{ws_id}/tag-bindings").json()["data"]
    return {(b["attributes"]["key"], b["attributes"]["value"]) for b in data}


@pytest.mark.skipif(not TERRAFORM_111.exists(), reason="Terraform >= 1.10 is not installed at /usr/local/bin")
def test_terraform_cloud_block_selects_and_creates_workspaces_by_key_value_tags(
    stack, api, terraform_env, tmp_path, unique
):
    team = unique("team")
    tagged = api.create_workspace(unique("tagged"))
    other = api.create_workspace(unique("other"))
    binding = {"data": [{"type": "tag-bindings", "attributes": {"key": "team", "value": team}}]}
    api.request("PATCH", f"/api/v2/workspaces/{tagged['id']}/tag-bindings", binding)
    wrong = {"data": [{"type": "tag-bindings", "attributes": {"key": "team", "value": "someone-else"}}]}
    api.request("PATCH", f"/api/v2/workspaces/{other['id']}/tag-bindings", wrong)
    work = tmp_path / "tf"
    work.mkdir()
    (work / "main.tf").write_text(_main_tf(stack, f'{{ team = "{team}" }}'))
    terraform = _client(TERRAFORM_111, work, terraform_env)

    selected = {"TF_WORKSPACE": tagged["attributes"]["name"]}
    terraform("init", "-input=false", "-no-color", extra_env=selected)
    listed = terraform("workspace", "list", "-no-color", extra_env=selected).stdout
    assert tagged["attributes"]["name"] in listed
    assert other["attributes"]["name"] not in listed
    applied = terraform("apply", "-auto-approve", "-input=false", "-no-color", extra_env=selected)
    assert "greeting" in applied.stdout
    assert api.workspace(tagged["attributes"]["name"])["relationships"]["current-state-version"]["data"]

    created = unique("created")
    terraform("workspace", "new", "-no-color", created)  # TF_WORKSPACE unset: `workspace new` refuses it
    ws = api.workspace(created)
    assert ("team", team) in _bindings(api, ws["id"])
    assert created in terraform("workspace", "list", "-no-color").stdout

    # a workspace outside the tag set cannot be selected
    refused = subprocess.run(
        [str(TERRAFORM_111), "init", "-input=false", "-no-color"],
        cwd=work,
        env={**terraform_env, "TF_IN_AUTOMATION": "1", "TF_WORKSPACE": other["attributes"]["name"]},
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert refused.returncode != 0
    assert "failed to find workspace" in (refused.stdout + refused.stderr)


@pytest.mark.skipif(not TERRAFORM_115.exists(), reason=f"terraform 1.15 is not at {TERRAFORM_115}")
def test_terraform_115_cloud_block_finds_workspaces_by_tags_inherited_from_their_project(
    stack, api, terraform_env, tmp_path, unique
):
    env = unique("env")
    binding = {"type": "tag-bindings", "attributes": {"key": "env", "value": env}}
    relationships = {"tag-bindings": {"data": [binding]}}
    body = {"data": {"type": "projects", "attributes": {"name": unique("prj")[:40]}, "relationships": relationships}}
    project = api.request("POST", f"/api/v2/organizations/{stack.organization}/projects", body, expect=201)
    project_id = project.json()["data"]["id"]
    inherits = api.create_workspace(unique("inherits"))
    outside = api.create_workspace(unique("outside"))
    moved = {"data": [{"type": "workspaces", "id": inherits["id"]}]}
    api.request("POST", f"/api/v2/projects/{project_id}/relationships/workspaces", moved, expect=204)
    work = tmp_path / "tf115"
    work.mkdir()
    (work / "main.tf").write_text(_main_tf(stack, f'{{ env = "{env}" }}'))
    terraform = _client(TERRAFORM_115, work, terraform_env)

    selected = {"TF_WORKSPACE": inherits["attributes"]["name"]}
    terraform("init", "-input=false", "-no-color", extra_env=selected)
    listed = terraform("workspace", "list", "-no-color", extra_env=selected).stdout
    assert inherits["attributes"]["name"] in listed
    assert outside["attributes"]["name"] not in listed
    assert "greeting" in terraform("apply", "-auto-approve", "-input=false", "-no-color", extra_env=selected).stdout

    created = unique("created")
    terraform("workspace", "new", "-no-color", created)
    assert ("env", env) in _bindings(api, api.workspace(created)["id"])
    assert created in terraform("workspace", "list", "-no-color").stdout


@pytest.mark.skipif(not TOFU.exists(), reason="OpenTofu is not installed")
def test_opentofu_cloud_block_selects_and_creates_workspaces_by_tags(stack, api, terraform_env, tmp_path, unique):
    tag = unique("svc")
    tagged = api.create_workspace(unique("tagged"))
    untagged = api.create_workspace(unique("untagged"))
    tags = {"data": [{"type": "tags", "attributes": {"name": tag}}]}
    api.request("POST", f"/api/v2/workspaces/{tagged['id']}/relationships/tags", tags, expect=204)
    work = tmp_path / "tofu"
    work.mkdir()
    (work / "main.tf").write_text(_main_tf(stack, f'["{tag}"]'))
    tofu = _client(TOFU, work, terraform_env)

    selected = {"TF_WORKSPACE": tagged["attributes"]["name"]}
    tofu("init", "-input=false", "-no-color", extra_env=selected)
    listed = tofu("workspace", "list", "-no-color", extra_env=selected).stdout
    assert tagged["attributes"]["name"] in listed
    assert untagged["attributes"]["name"] not in listed
    created = unique("created")
    tofu("workspace", "new", "-no-color", created)
    assert tag in api.workspace(created)["attributes"]["tag-names"]
