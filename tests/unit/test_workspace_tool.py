"""A workspace's tool (`iac-platform`, Terrace's extension of the TFC workspace): terraform or OpenTofu. A run
resolves its workspace's terraform-version among that tool's versions only (1.6-1.12 are releases of both), records
the tool with the exact version, and its apply uses the same; the CLI whose `cloud` block creates a workspace names
its tool; a run the other tool's CLI sends errors at once; a workspace stored before workspaces had a tool resolves
as its runs always did (the deployment's default tool first)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from run_helpers import RunEnv, make_run_env
from terrace.domain import tool_versions as tv
from terrace.runner import catalog as runner_catalog
from terrace.runner.commands import select_binary
from terrace.runner.rundir import RunSetupError
from terrace.services.admin.store import ToolVersionStore
from terrace.services.admin.tool_versions import ToolVersionService

CATALOG = "terraform=1.0.3,terraform=1.9.4,terraform=1.11.4,opentofu=1.9.4"
OPENTOFU = {"User-Agent": "OpenTofu/1.9.4"}  # what OpenTofu's cloud backend sends on every request
TERRAFORM = {"User-Agent": "go-tfe", "Terraform-Version": "1.11.4"}  # terraform's cloud backend (go-tfe)


def _service(default_tool: str) -> ToolVersionService:
    from terrace.adapters.memory_table import MemoryTable

    catalog = {"terraform": ["1.0.3", "1.9.4", "1.11.4"], "opentofu": ["1.9.4"]}
    return ToolVersionService(ToolVersionStore(MemoryTable()), catalog, default_tool)


@pytest.mark.parametrize("default_tool", ["terraform", "opentofu"])
def test_resolve_takes_the_workspace_tool(default_tool: str) -> None:
    service = _service(default_tool)
    assert service.resolve("1.9.4", "opentofu") == ("1.9.4", "opentofu", None)
    assert service.resolve("1.9.4", "terraform") == ("1.9.4", "terraform", None)
    assert service.resolve("latest", "opentofu") == ("1.9.4", "opentofu", None)
    assert service.resolve("~> 1.9", "terraform") == ("1.11.4", "terraform", None)
    version, tool, problem = service.resolve("1.0.3", "opentofu")  # a release of terraform only: never switched
    assert (version, tool) == ("1.0.3", "opentofu")
    assert problem and "OpenTofu versions available: OpenTofu 1.9.4" in problem and "Terraform" not in problem
    # a workspace stored before workspaces had a tool: the default tool first, else the other (as always)
    assert service.resolve("1.9.4")[:2] == ("1.9.4", default_tool)
    assert service.resolve("1.0.3")[:2] == ("1.0.3", "terraform")
    assert service.tool_for("latest") == default_tool and service.tool_for("1.11.4") == "terraform"


def test_the_tool_of_a_workspace_without_one_follows_an_admin_change_at_once() -> None:
    service = _service("opentofu")
    assert service.tool_for("1.9.4") == "opentofu"  # remembered for a while: a list asks once per version
    (record,) = service.list("opentofu", exact="1.9.4")
    service.update("opentofu", record.id, {"enabled": False})
    assert service.tool_for("1.9.4") == "terraform"  # this process changed a record: read again


def test_settle_caps_a_newer_client_within_its_tool() -> None:
    service = _service("terraform")
    assert service.settle("1.10.0", "opentofu") == "1.9.4"  # OpenTofu's newest 1.x, not terraform's 1.11.4
    assert service.settle("1.12.0", "terraform") == "1.11.4"


def test_client_tool_from_the_request() -> None:
    assert tv.client_tool("OpenTofu/1.9.4", None) == "opentofu"
    assert tv.client_tool("go-tfe", "1.11.4") == "terraform"
    assert tv.client_tool("HashiCorp Terraform/1.11.4 (+https://www.terraform.io)", None) == "terraform"
    assert tv.client_tool("go-tfe", None) == tv.client_tool("testclient", "1.0") == tv.client_tool(None, None) == ""


@pytest.fixture(scope="module")
def env() -> RunEnv:
    return make_run_env(tool_downloads=False, tool_catalog=CATALOG)  # terraform is the default tool


def _workspace(env: RunEnv, name: str, headers: dict[str, str] | None = None, **attributes: Any) -> dict[str, Any]:
    body = {"data": {"type": "workspaces", "attributes": {"name": name, **attributes}}}
    response = env.client.post(
        f"/api/v2/organizations/{env.organization}/workspaces", json=body, headers={**env.headers, **(headers or {})}
    )
    assert response.status_code == 201, response.text
    return dict(response.json()["data"])


def _patch(env: RunEnv, workspace_id: str, headers: dict[str, str] | None = None, **attributes: Any) -> Any:
    body = {"data": {"type": "workspaces", "attributes": attributes}}
    return env.client.patch(f"/api/v2/workspaces/{workspace_id}", json=body, headers={**env.headers, **(headers or {})})


def _run(env: RunEnv, workspace_id: str, headers: dict[str, str] | None = None) -> dict[str, Any]:
    cv_id = env.upload_config(speculative=True, workspace_id=workspace_id)
    body = {
        "data": {
            "type": "runs",
            "attributes": {"plan-only": True},
            "relationships": {
                "workspace": {"data": {"type": "workspaces", "id": workspace_id}},
                "configuration-version": {"data": {"type": "configuration-versions", "id": cv_id}},
            },
        }
    }
    response = env.client.post("/api/v2/runs", json=body, headers={**env.headers, **(headers or {})})
    assert response.status_code == 201, response.text
    return dict(response.json()["data"])


def test_an_opentofu_cloud_block_workspace_runs_opentofu_on_a_terraform_deployment(env: RunEnv) -> None:
    ws = _workspace(env, "tofu-made", OPENTOFU)  # OpenTofu's cloud block: create, then pin to its own version
    assert ws["attributes"]["iac-platform"] == "opentofu"
    pinned = _patch(env, ws["id"], OPENTOFU, **{"terraform-version": "1.9.4"})
    assert pinned.status_code == 200 and pinned.json()["data"]["attributes"]["terraform-version"] == "1.9.4"
    run = _run(env, ws["id"], OPENTOFU)
    assert run["attributes"]["status"] != "errored", run["attributes"]
    spec = env.claim()
    assert (spec["tool"], spec["terraform_version"]) == ("opentofu", "1.9.4")  # 1.9.4 is terraform's too
    recorded = env.container.run_store.load(run["id"])
    assert (recorded.tool, recorded.terraform_version) == ("opentofu", "1.9.4")


def test_a_terraform_cloud_block_workspace_runs_terraform() -> None:
    env = make_run_env(tool_downloads=False, tool_catalog=CATALOG, default_tool="opentofu")
    ws = _workspace(env, "tf-made", TERRAFORM)
    assert ws["attributes"]["iac-platform"] == "terraform"
    assert _patch(env, ws["id"], TERRAFORM, **{"terraform-version": "1.9.4"}).status_code == 200
    run = _run(env, ws["id"], TERRAFORM)
    assert env.claim()["tool"] == env.container.run_store.load(run["id"]).tool == "terraform"  # OpenTofu's too
    plain = _workspace(env, "api-made")  # neither CLI: the deployment's default tool
    assert plain["attributes"]["iac-platform"] == "opentofu"


def test_the_other_tools_cli_errors_the_run_naming_the_workspace_tool(env: RunEnv) -> None:
    ws = _workspace(env, "tf-pinned", TERRAFORM, **{"terraform-version": "1.9.4"})
    run = _run(env, ws["id"], OPENTOFU)
    assert run["attributes"]["status"] == "errored"
    message = run["attributes"]["error-message"]
    assert "runs Terraform (its iac-platform is terraform)" in message and "sent by OpenTofu" in message
    plan = env.api("GET", f"/runs/{run['id']}/plan").json()["data"]["attributes"]
    log = env.client.get(plan["log-read-url"]).text  # what the CLI prints: the reason, not an empty log
    assert f"Error: {message}" in log, log
    assert _run(env, ws["id"])["attributes"]["status"] != "errored"  # an API client names no tool
    env.claim()


def test_iac_platform_is_validated_and_set_through_the_api(env: RunEnv) -> None:
    ws = _workspace(env, "settable")
    assert ws["attributes"]["iac-platform"] == "terraform"  # the deployment's default tool
    for bad in ("tofu", "", None, 1, "Terraform"):
        refused = _patch(env, ws["id"], **{"iac-platform": bad})
        assert refused.status_code == 422, (bad, refused.text)
        assert refused.json()["errors"][0]["source"]["pointer"] == "/data/attributes/iac-platform"
    changed = _patch(env, ws["id"], **{"iac-platform": "opentofu", "terraform-version": "1.10.0"})
    assert changed.status_code == 200, changed.text
    attributes = changed.json()["data"]["attributes"]
    assert (attributes["iac-platform"], attributes["terraform-version"]) == ("opentofu", "1.9.4")  # newest OpenTofu
    body = {"data": {"type": "workspaces", "attributes": {"name": "bad-tool", "iac-platform": "pulumi"}}}
    response = env.api("POST", f"/organizations/{env.organization}/workspaces", body)
    assert response.status_code == 422, response.text


def test_the_apply_uses_the_tool_the_plan_resolved_to(env: RunEnv) -> None:
    ws = _workspace(env, "switched-later", OPENTOFU, **{"terraform-version": "1.9.4"})
    run = _run(env, ws["id"], OPENTOFU)
    assert _patch(env, ws["id"], **{"iac-platform": "terraform"}).status_code == 200  # after the run resolved
    assert env.claim()["tool"] == "opentofu"
    assert env.container.run_store.load(run["id"]).tool == "opentofu"


def test_a_workspace_stored_before_workspaces_had_a_tool_resolves_as_before() -> None:
    env = make_run_env(tool_downloads=False, tool_catalog=CATALOG, default_tool="opentofu")
    store = env.container.workspace_store.workspaces
    for name, version, tool in (("old-both", "1.9.4", "opentofu"), ("old-tf", "1.0.3", "terraform")):
        ws = _workspace(env, name, **{"terraform-version": version})
        current = store.find(ws["id"])
        assert current is not None
        store.replace(dataclasses.replace(current, tool="", version=current.version + 1), current.version)
        read = env.api("GET", f"/workspaces/{ws['id']}").json()["data"]["attributes"]
        assert read["iac-platform"] == tool  # what its runs resolved to: the default tool first
        _run(env, ws["id"])
        assert env.claim()["tool"] == tool


def test_a_runner_never_switches_a_run_to_the_other_tool(tmp_path: Path) -> None:
    for rel in ("terraform/1.9.4/terraform", "tofu/1.9.4/tofu"):
        binary = tmp_path / rel
        binary.parent.mkdir(parents=True)
        binary.write_text("#!/bin/sh\n")
        binary.chmod(0o755)
    held = runner_catalog.scan(tmp_path)
    default = str(tmp_path / "terraform/1.9.4/terraform")
    assert select_binary("1.9.4", default, {}, held, "opentofu", only=True).product == "OpenTofu"
    assert select_binary("1.9.4", default, {}, held, "terraform", only=True).product == "Terraform"
    no_tofu = {"terraform": held["terraform"], "opentofu": {}}
    with pytest.raises(RunSetupError, match="the run uses OpenTofu 'latest' and this runner holds no such binary"):
        select_binary("latest", default, {}, no_tofu, "opentofu", only=True)  # the default binary is terraform
    assert select_binary("latest", default, {}, no_tofu, "opentofu").product == "Terraform"  # a run without a tool


def _migrated(source_tool: str | None) -> dict[str, Any]:
    """The attributes `terrace migrate` creates a source workspace (pinned to 1.9.5) with on the target."""
    from terrace.migrate import workspaces
    from test_migrate_refusals import migration

    created: list[dict[str, Any]] = []

    def create(request: httpx.Request) -> httpx.Response:
        attributes = json.loads(request.content)["data"]["attributes"]
        created.append(attributes)
        return httpx.Response(201, json={"data": {"id": "ws-new", "type": "workspaces", "attributes": attributes}})

    m, _seen = migration({}, {("POST", "/api/v2/organizations/acme/workspaces"): create})
    attributes = {"name": "svc", "terraform-version": "1.9.5", "iac-platform": source_tool}
    assert workspaces.workspace(m, {"id": "ws-src", "attributes": attributes}) == "ws-new"
    return created[0]


def test_a_workspace_migrated_from_hcp_terraform_runs_terraform() -> None:
    """HCP Terraform and TFE run Terraform only: a migrated workspace says so (the target's default tool may be
    OpenTofu, and 1.9.5 is a release of both); a Terrace source's own tool moves as it is."""
    assert (_migrated(None)["iac-platform"], _migrated(None)["terraform-version"]) == ("terraform", "1.9.5")
    assert _migrated("opentofu")["iac-platform"] == "opentofu"


def test_the_default_tool_setting_names_a_tool() -> None:
    """A new workspace takes the default tool as its iac-platform: a misspelt setting fails at start, not every
    workspace's creation with a 422."""
    from pydantic import ValidationError
    from terrace.config import Settings

    with pytest.raises(ValidationError, match="default_tool"):
        Settings(table_name="t", blob_bucket="b", url_signing_secret="s", default_tool="tofu")
