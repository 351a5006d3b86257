"""The explorer as HCP Terraform's clients call it (its API reference, field by field): dasherized attributes, every
field of each view, filters as HCP's own examples write them, semantic versions ("module X below Y" with
pre-releases), unpinned providers, summaries kept fresh by the run's event (not by a read), and bulk actions in
HCP's payload shape with `target_ids`."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest
from fastapi.testclient import TestClient
from run_helpers import RunEnv, make_run_env, tarball
from terrace.domain.explorer import Use
from terrace.domain.explorer_query import parse
from terrace.services.workflows.store_explorer import summary_from_item
from terrace.web.ui.session import COOKIE
from test_explorer import VPC, _drain, _reader, _workspace

LOCK = """provider "example.com/hashicorp/aws" {
  version     = "5.31.0"
  hashes = ["h1:abc"]
}
"""


def _main_tf(vpc_version: str, aws_constraint: str = "") -> str:
    constraint = f', version = "{aws_constraint}"' if aws_constraint else ""
    return f"""terraform {{
  required_providers {{
    aws = {{ source = "hashicorp/aws"{constraint} }}
  }}
}}
module "network" {{
  source  = "{VPC}"
  version = "{vpc_version}"
}}
"""


@pytest.fixture(scope="module")
def env() -> RunEnv:
    env = make_run_env()
    pinned = _workspace(env, "pinned", "1.10.2", {"main.tf": _main_tf("5.0.0", "~> 5.0"), ".terraform.lock.hcl": LOCK})
    _workspace(env, "loose", "1.9.8", {"main.tf": _main_tf("5.0.0-rc.1"), ".terraform.lock.hcl": LOCK})
    vcs = {"identifier": "acme/network", "branch": "main"}
    env.container.workspaces.mutate(pinned, lambda ws: dataclasses.replace(
        ws, tag_names=("prod",), tag_bindings=(("billing", "tier1"),),
        extra={**ws.extra, "vcs-repo": vcs, "source-module-id": "private/acme/net/aws/1.0.2"}))  # fmt: skip
    return env


def _explore(env: RunEnv, query: str) -> list[dict[str, Any]]:
    response = env.client.get(f"/api/v2/organizations/acme/explorer?{query}", headers=env.headers)
    assert response.status_code == 200, response.text
    return list(response.json()["data"])


def test_rows_carry_hcps_fields_with_dasherized_names(env):
    (row,) = _explore(env, "type=workspaces&filter[0][workspace_name][is][0]=pinned")
    attrs = row["attributes"]
    assert row["type"] == "visibility-workspace" and row["id"] == attrs["external-id"]
    assert attrs["workspace-name"] == "pinned" and attrs["workspace-terraform-version"] == "1.10.2"
    assert attrs["vcs-repo-identifier"] == "acme/network" and attrs["tags"] == "prod, billing:tier1"
    assert attrs["source-module-id"] == "private/acme/net/aws/1.0.2"
    assert attrs["current-rum-count"] == attrs["resource-count"] == 0
    assert attrs["current-run-status"] == "applied" and attrs["modules"] == f"{VPC}:5.0.0"
    hcp_workspace_fields = {"all-checks-succeeded", "checks-errored", "checks-failed", "checks-passed",
                            "checks-unknown", "current-rum-count", "current-run-applied-at", "current-run-external-id",
                            "current-run-status", "drifted", "external-id", "module-count", "modules",
                            "organization-name", "project-external-id", "project-name", "provider-count", "providers",
                            "resource-count", "resources-drifted", "resources-undrifted", "source-module-id",
                            "state-version-terraform-version", "tags", "vcs-repo-identifier", "workspace-created-at",
                            "workspace-name", "workspace-terraform-version", "workspace-updated-at"}  # fmt: skip
    assert hcp_workspace_fields <= set(attrs)
    (version,) = _explore(env, "type=tf_versions&filter[0][version][is][0]=1.10.2")
    assert version["attributes"]["unique-identifier"] and version["attributes"]["workspace-count"] == 1
    modules = _explore(env, "type=modules&sort=version")
    assert [(m["attributes"]["version"], m["attributes"]["registry-type"]) for m in modules] == [
        ("5.0.0-rc.1", "public"), ("5.0.0", "public")]  # fmt: skip


def test_hcps_own_filter_example_shares_an_index(env):
    """HCP's reference writes `filter[0][name][contains][0]=aws&filter[0][version][is][0]=1.1`: both hold."""
    found = _explore(env, "type=modules&filter[0][name][contains][0]=vpc&filter[0][version][is][0]=5.0.0")
    assert [m["attributes"]["workspaces"] for m in found] == ["pinned"]


def test_module_x_below_version_y_is_semantic():
    rows = [{"id": v, "version": v} for v in ("5.0.0", "5.0.0-rc.1", "4.10.0", "4.9.1", "v5.1.0", "5.0.0-beta.2",
                                              "5.0.0-beta.11", "10.0.0")]  # fmt: skip
    below = parse([("type", "modules"), ("filter[0][version][lt][0]", "5.0.0"), ("sort", "version")]).apply(rows)
    assert [r["version"] for r in below] == ["4.9.1", "4.10.0", "5.0.0-beta.2", "5.0.0-beta.11", "5.0.0-rc.1"]
    newest = parse([("type", "modules"), ("sort", "-version")]).apply(rows)
    assert [r["version"] for r in newest][:3] == ["10.0.0", "v5.1.0", "5.0.0"]


def test_the_api_finds_the_workspaces_below_a_version_and_the_unpinned_providers(env):
    below = _explore(env, f"type=modules&filter[0][source][is][0]={VPC}&filter[1][version][lt][0]=5.0.0")
    assert [m["attributes"]["workspaces"] for m in below] == ["loose"]  # 5.0.0-rc.1 comes before 5.0.0
    unpinned = _explore(env, "type=providers&filter[0][constraint][is_empty][0]=")
    assert [(p["attributes"]["source"], p["attributes"]["version"], p["attributes"]["workspaces"])
            for p in unpinned] == [("hashicorp/aws", "5.31.0", "loose")]  # locked, yet no constraint  # fmt: skip
    pinned = _explore(env, "type=providers&filter[0][constraint][is_not_empty][0]=")
    assert [(p["attributes"]["constraint"], p["attributes"]["workspaces"]) for p in pinned] == [("~> 5.0", "pinned")]


def test_an_applied_run_refreshes_the_summary_through_its_event(env):
    """The explorer reads what the feed recorded: a newer configuration shows once the run's events are handled,
    and no read of the explorer opens a configuration."""
    ws_id = _workspace(env, "moving", "1.9.8", {"main.tf": _main_tf("4.0.0", "~> 5.0")})
    try:
        body = {"data": {"type": "configuration-versions", "attributes": {"auto-queue-runs": False}}}
        cv = env.api("POST", f"/workspaces/{ws_id}/configuration-versions", body).json()["data"]
        env.land(cv["attributes"]["upload-url"].split("memory://blobs/")[1].split("?")[0],
                 tarball({"main.tf": _main_tf("5.2.0", "~> 5.0")}))  # fmt: skip
        env.create_run(cv["id"], ws_id, **{"auto-apply": True})
        env.work_next()
        env.work_next()
        blob_reads: list[str] = []
        original = env.container.blobs.get
        env.container.blobs.get = lambda key, *a, **k: blob_reads.append(key) or original(key, *a, **k)  # type: ignore[method-assign]
        try:
            query = "type=workspaces&filter[0][workspace_name][is][0]=moving&fields=modules"
            assert _explore(env, query)[0]["attributes"]["modules"] == f"{VPC}:4.0.0"  # the event not yet handled
            assert blob_reads == []
            _drain(env)
            assert _explore(env, query)[0]["attributes"]["modules"] == f"{VPC}:5.2.0"
        finally:
            env.container.blobs.get = original  # type: ignore[method-assign]
    finally:
        assert env.api("DELETE", f"/workspaces/{ws_id}").status_code in (200, 204)


def _bulk(env: RunEnv, attributes: dict[str, Any], kind: str = "bulk_actions") -> Any:
    body = {"data": {"type": kind, "attributes": attributes}}
    return env.client.post("/api/v2/organizations/acme/explorer/bulk-actions", json=body, headers=env.headers)


def test_bulk_actions_in_hcps_payload_shape(env):
    inputs = {"subject": "Pin the aws provider", "message": "Add a version constraint."}
    loose = env.container.workspaces.find_id("acme", "loose")
    made = _bulk(env, {"action_type": "change_requests", "action_inputs": inputs, "target_ids": [loose]})
    assert made.status_code == 201, made.text
    attrs = made.json()["data"]["attributes"]
    assert attrs["action_type"] == "change_requests" and attrs["workspace_count"] == 1
    assert attrs["created_by"]["type"] == "users"
    (request,) = made.json()["included"]
    assert request["relationships"]["workspace"]["data"]["id"] == loose
    saved_view_query = {"type": "workspaces", "filter": [{"field": "workspace_name", "operator": "contains",
                                                          "value": ["pin"]}], "sort": ["-workspace_name"]}  # fmt: skip
    by_query = _bulk(env, {"action_type": "change_request", "action_inputs": inputs, "query": saved_view_query},
                     kind="explorer-bulk-actions")  # fmt: skip
    assert by_query.status_code == 201 and by_query.json()["data"]["attributes"]["workspace_count"] == 1
    archived = env.client.patch(f"/api/v2/workspaces/change-requests/{request['id']}", headers=env.headers)
    assert archived.status_code == 200 and archived.json()["data"]["attributes"]["archived-at"]
    for bad, status in ((["ws-nope"], 404), ([], 422), ("ws-x", 422), ([7], 422)):
        refused = _bulk(env, {"action_type": "change_requests", "action_inputs": inputs, "target_ids": bad})
        assert refused.status_code == status, refused.text


def test_a_summary_recorded_before_constraints_were_kept_is_never_taken_for_unpinned():
    item = {"configuration": {"configuration_version_id": "cv-1", "providers": [
        {"name": "aws", "source": "hashicorp/aws", "version": "5.31.0"},
        {"name": "null", "source": "hashicorp/null", "version": ""}]}}  # fmt: skip
    providers = summary_from_item(item).providers
    assert [(p.source, p.constraint) for p in providers] == [("hashicorp/aws", "5.31.0"), ("hashicorp/null", "")]


def test_the_explorer_page_offers_change_requests_to_those_who_may_make_them(env):
    owner_cookie, session = env.container.web_sessions.sign_in(env.headers["Authorization"].split()[1])
    owner = TestClient(env.client.app)
    owner.cookies.set(COOKIE, owner_cookie)
    query = "type=workspaces&f0=workspace_name&o0=is&v0=loose"
    assert 'id="change-request-form"' in owner.get(f"/app/acme/explorer?{query}").text
    form = {"type": "workspaces", "f0": "workspace_name", "o0": "is", "v0": "loose", "subject": "Pin aws"}
    assert owner.post("/app/acme/explorer/change-requests", data=form, follow_redirects=False).status_code == 403
    made = owner.post("/app/acme/explorer/change-requests", data={**form, "csrf_token": session.csrf_token},
                      follow_redirects=False)  # fmt: skip
    assert made.status_code == 303 and "made=1" in made.headers["location"] and "v0=loose" in made.headers["location"]
    assert "Change request made on 1 workspace." in owner.get(made.headers["location"]).text
    loose = env.container.workspaces.find_id("acme", "loose")
    subjects = [cr.subject for cr in env.container.workspace_store.change_requests.of_workspace(loose)]
    assert "Pin aws" in subjects

    reader_cookie, _ = env.container.web_sessions.sign_in(_reader(env, "explorer-reader", "loose")["Authorization"]
                                                          .split()[1])  # fmt: skip
    reader = TestClient(env.client.app)
    reader.cookies.set(COOKIE, reader_cookie)
    page = reader.get(f"/app/acme/explorer?{query}")
    assert page.status_code == 200 and "loose" in page.text and 'id="change-request-form"' not in page.text


def test_a_module_call_has_the_version_terraform_init_installed(env):
    """A configuration the CLI uploads carries `.terraform/modules/modules.json`: "below 5.0.0" then means the
    version installed, not the constraint's first number."""
    feed = env.container.explorer_feed
    calls = {"module": {"network": {"source": VPC, "version": ">= 3.0"}, "local": {"source": "./modules/x"}}}
    manifest = {"Modules": [{"Key": "", "Source": "", "Dir": "."},
                            {"Key": "network", "Source": f"registry.terraform.io/{VPC}", "Version": "5.1.2"},
                            {"Key": "network.subnets", "Source": "./subnets", "Version": "9.9.9"},
                            {"Key": "local", "Source": "./modules/x", "Dir": "modules/x"}]}  # fmt: skip
    files = {"infra/main.tf.json": json.dumps(calls), "infra/.terraform/modules/modules.json": json.dumps(manifest)}
    modules, _ = feed.read_configuration(tarball(files), "infra")
    assert modules == (Use("x", "./modules/x", "", ""), Use("vpc", VPC, "5.1.2", ">= 3.0"))
    broken = {"main.tf.json": json.dumps(calls), ".terraform/modules/modules.json": "{not json"}
    modules, _ = feed.read_configuration(tarball(broken), "")
    assert Use("vpc", VPC, ">= 3.0", ">= 3.0") in modules  # the constraint stands
