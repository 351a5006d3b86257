"""`terrace migrate` between two embedded servers: the source populated through the API and terraform 1.0.3,
the target checked with terraform (`state pull` byte for byte) and the API; a dry run writes nothing, a re-run
duplicates nothing, a failure midway (one call with a bad token) leaves a report and a re-run resumes; policies
and a registry module version arrive byte for byte. Then a migration into the run stack, SIGKILLed midway through
a state history, resumed, and planned on the target's runners through the remote backend: "No changes"."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import shutil
import signal
import ssl
import subprocess
import sys
import tarfile
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import terrace
from conftest import Api, StackInfo, Terraform, client_env
from e2e_runs import RUN_TIMEOUT_S
from job_uids import traversable
from terrace.cli import app
from terrace.local.stack import LocalStack
from terrace.migrate.client import Api as MigrateApi
from terrace.migrate.client import ssl_context
from terrace.migrate.engine import Migration, Options
from terrace.migrate.report import Report
from terrace.migrate.states import LOCK_REASON
from typer.testing import CliRunner

pytestmark = pytest.mark.e2e

ORG = "acme"


class WithoutLineage(httpx.HTTPTransport):
    """Serves state versions as HCP Terraform does, without a `lineage` attribute (read from the file then)."""

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = super().handle_request(request)
        if "state-versions" not in request.url.path or request.method != "GET" or response.status_code != 200:
            return response
        document = json.loads(response.read())
        data = document["data"] if isinstance(document["data"], list) else [document["data"]]
        for item in data:
            item["attributes"].pop("lineage", None)
        return httpx.Response(200, json=document)


def outputs(**values: Any) -> str:
    return "".join(f'output "{k}" {{\n  value = {json.dumps(v)}\n}}\n' for k, v in values.items())


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[StackInfo, StackInfo]]:
    """Two embedded servers: the source serves organization acme; the target starts without it."""
    root = traversable(Path(tempfile.mkdtemp(prefix="terrace-migrate-")))
    stacks = [
        LocalStack(
            port=0,
            organization=org,
            state_dir=root / side,
            prefix=f"migrate-{side}-{uuid.uuid4().hex[:8]}",
            workers=False,
            data_dir=root / side / "data",
        )
        for side, org in (("source", ORG), ("target", "home"))
    ]
    try:
        infos = [StackInfo(**stack.start().as_dict()) for stack in stacks]
        yield infos[0], infos[1]
    finally:
        for stack in stacks:
            stack.stop()
        shutil.rmtree(root, ignore_errors=True)


def workdir(base: Path, stack: StackInfo, name: str, main_tf: str) -> Terraform:
    path = base / name
    path.mkdir()
    home = base / f"{name}-home"
    home.mkdir()
    return Terraform(path, client_env(stack, home)).write(main_tf)


def backend(stack: StackInfo, workspace: str) -> str:
    return StackInfo(**{**stack.__dict__, "organization": ORG}).remote_backend(name=workspace)


def populate(src: Api, stack: StackInfo, base: Path) -> None:
    org = f"/api/v2/organizations/{ORG}"
    src.request("PATCH", org, {"data": {"type": "organizations", "attributes": {"default-execution-mode": "local"}}})
    project = src.request(
        "POST", f"{org}/projects", {"data": {"type": "projects", "attributes": {"name": "platform"}}}, expect=201
    ).json()["data"]
    net = src.request(
        "POST",
        f"{org}/workspaces",
        {
            "data": {
                "type": "workspaces",
                "attributes": {
                    "name": "net",
                    "execution-mode": "local",
                    "working-directory": "infra",
                    "auto-apply": True,
                    "description": "the network",
                },
                "relationships": {"project": {"data": {"type": "projects", "id": project["id"]}}},
            }
        },
        expect=201,
    ).json()["data"]
    app_ws = src.create_workspace("app", **{"execution-mode": "remote"})
    src.request(
        "POST",
        f"/api/v2/workspaces/{net['id']}/relationships/tags",
        {"data": [{"type": "tags", "attributes": {"name": "prod"}}, {"type": "tags", "attributes": {"name": "eu"}}]},
        expect=204,
    )
    for key, value, category, sensitive in (
        ("region", "eu-west-1", "terraform", False),
        ("DB_PASSWORD", "hunter2", "env", True),
    ):
        attrs = {"key": key, "value": value, "category": category, "sensitive": sensitive, "description": f"{key}!"}
        src.request(
            "POST", f"/api/v2/workspaces/{net['id']}/vars", {"data": {"type": "vars", "attributes": attrs}}, 201
        )
    varset = src.request(
        "POST", f"{org}/varsets", {"data": {"type": "varsets", "attributes": {"name": "shared"}}}, expect=201
    ).json()["data"]
    var = {"key": "owner", "value": "platform-team", "category": "terraform"}
    src.request(
        "POST", f"/api/v2/varsets/{varset['id']}/relationships/vars", {"data": {"type": "vars", "attributes": var}}, 201
    )
    src.request(
        "POST",
        f"/api/v2/varsets/{varset['id']}/relationships/workspaces",
        {"data": [{"type": "workspaces", "id": net["id"]}]},
        expect=204,
    )
    team = src.request(
        "POST", f"{org}/teams", {"data": {"type": "teams", "attributes": {"name": "devs"}}}, expect=201
    ).json()["data"]
    grant = {
        "attributes": {"access": "write"},
        "relationships": {
            "team": {"data": {"type": "teams", "id": team["id"]}},
            "workspace": {"data": {"type": "workspaces", "id": net["id"]}},
        },
    }
    src.request("POST", "/api/v2/team-workspaces", {"data": {"type": "team-workspaces", **grant}}, expect=201)
    trigger = {"relationships": {"sourceable": {"data": {"type": "workspaces", "id": net["id"]}}}}
    src.request("POST", f"/api/v2/workspaces/{app_ws['id']}/run-triggers", {"data": trigger}, expect=201)
    project_grant = {
        "attributes": {"access": "maintain"},
        "relationships": {
            "team": {"data": {"type": "teams", "id": team["id"]}},
            "project": {"data": {"type": "projects", "id": project["id"]}},
        },
    }
    src.request("POST", "/api/v2/team-projects", {"data": {"type": "team-projects", **project_grant}}, expect=201)
    consumers = {"data": [{"type": "workspaces", "id": app_ws["id"]}]}
    src.request("POST", f"/api/v2/workspaces/{net['id']}/relationships/remote-state-consumers", consumers, 204)
    hook = {"name": "deploys", "destination-type": "generic", "enabled": False, "url": "https://hooks.example.com/t"}
    hook |= {"triggers": ["run:completed"], "token": "s3cret"}
    body = {"data": {"type": "notification-configurations", "attributes": hook}}
    src.request("POST", f"/api/v2/workspaces/{net['id']}/notification-configurations", body, 201)
    policies_and_keys(src, net["id"], project["id"])
    publish_module(src, ORG, "vpc", "aws", "1.2.0")
    pool = src.request(
        "POST", f"{org}/agent-pools", {"data": {"type": "agent-pools", "attributes": {"name": "dc1"}}}, expect=201
    ).json()["data"]
    src.create_workspace("onprem", **{"execution-mode": "agent", "agent-pool-id": pool["id"]})
    tf = workdir(base, stack, "source-net", backend(stack, "net") + outputs(answer=1))
    tf.init()
    for answer in (1, 2, 3):  # three state versions
        tf.write(backend(stack, "net") + outputs(answer=answer, label=f"v{answer}")).apply()


REGO = """package terraform.policies.buckets
import rego.v1

deny contains msg if {
    some rc in input.plan.resource_changes
    rc.type == "aws_s3_bucket_acl"
    msg := sprintf("%s may not set an ACL", [rc.address])
}
"""
SENTINEL = "main = rule { true }\n"


def policies_and_keys(src: Api, net_id: str, project_id: str) -> None:
    """An OPA policy in an overridable set scoped to workspace net and project platform (with a plain and a
    sensitive parameter); a Sentinel policy in a global set; an SSH key assigned to net."""
    org = f"/api/v2/organizations/{ORG}"
    ids = {}
    for name, kind, level, text, extra in (
        ("buckets", "opa", "mandatory", REGO, {"query": "data.terraform.policies.buckets.deny"}),
        ("always", "sentinel", "soft-mandatory", SENTINEL, {}),
    ):
        attrs = {"name": name, "kind": kind, "enforcement-level": level, "description": f"{name}!", **extra}
        body = {"data": {"type": "policies", "attributes": attrs}}
        ids[name] = src.request("POST", f"{org}/policies", body, expect=201).json()["data"]["id"]
        uploaded = src.http.put(f"/api/v2/policies/{ids[name]}/upload", content=text.encode())
        assert uploaded.status_code == 200, uploaded.text
    guardrails = {
        "data": {
            "type": "policy-sets",
            "attributes": {"name": "guardrails", "kind": "opa", "overridable": True, "description": "no ACLs"},
            "relationships": {
                "policies": {"data": [{"type": "policies", "id": ids["buckets"]}]},
                "workspaces": {"data": [{"type": "workspaces", "id": net_id}]},
                "projects": {"data": [{"type": "projects", "id": project_id}]},
            },
        }
    }
    set_id = src.request("POST", f"{org}/policy-sets", guardrails, expect=201).json()["data"]["id"]
    for key, value, sensitive in (("env", "prod", False), ("api_key", "s3cret", True)):
        param = {"key": key, "value": value, "category": "policy-set", "sensitive": sensitive}
        body = {"data": {"type": "vars", "attributes": param}}
        src.request("POST", f"/api/v2/policy-sets/{set_id}/parameters", body, 201)
    legacy = {
        "data": {
            "type": "policy-sets",
            "attributes": {"name": "legacy", "kind": "sentinel", "global": True},
            "relationships": {"policies": {"data": [{"type": "policies", "id": ids["always"]}]}},
        }
    }
    src.request("POST", f"{org}/policy-sets", legacy, expect=201)
    value = "-----BEGIN OPENSSH PRIVATE KEY-----\nnot read back\n"
    key = {"data": {"type": "ssh-keys", "attributes": {"name": "deploy", "value": value}}}
    key_id = src.request("POST", f"{org}/ssh-keys", key, expect=201).json()["data"]["id"]
    assign = {"data": {"type": "workspaces", "attributes": {"id": key_id}}}
    src.request("PATCH", f"/api/v2/workspaces/{net_id}/relationships/ssh-key", assign)


def module_tarball(version: str) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, text in (("main.tf", f'output "v" {{\n  value = "{version}"\n}}\n'), ("README.md", "# vpc\n")):
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def publish_module(api: Api, org: str, name: str, provider: str, version: str) -> None:
    body = {"data": {"type": "registry-modules", "attributes": {"name": name, "provider": provider}}}
    api.request("POST", f"/api/v2/organizations/{org}/registry-modules", body, expect=201)
    body = {"data": {"type": "registry-module-versions", "attributes": {"version": version}}}
    created = api.request("POST", f"/api/v2/registry-modules/{org}/{name}/{provider}/versions", body, expect=201)
    put = api.http.put(created.json()["data"]["links"]["upload"], content=module_tarball(version))
    assert put.status_code == 200, put.text


def module_archive(api: Api, org: str, name: str, provider: str, version: str) -> bytes:
    """A version's archive through the module registry protocol, as terraform downloads it."""
    got = api.http.get(f"/api/registry/v1/modules/{org}/{name}/{provider}/{version}/download")
    assert got.status_code == 204, got.text
    archive = api.http.get(got.headers["X-Terraform-Get"])
    assert archive.status_code == 200
    return archive.content


def by_name(api: Api, path: str) -> dict[str, dict[str, Any]]:
    return {i["attributes"]["name"]: i for i in api.request("GET", path).json()["data"]}


def policy_checks(src: Api, dst: Api, net_id: str, project_id: str, todo: set[tuple[str, str]]) -> None:
    """Policies equal on both sides (settings, text byte for byte); sets with their scopes and parameters."""
    path = f"/api/v2/organizations/{ORG}/policies"
    before, after = by_name(src, path), by_name(dst, path)
    assert set(after) == {"buckets", "always"}
    for name, policy in before.items():
        keys = ("kind", "enforcement-level", "query", "description")
        assert {k: after[name]["attributes"][k] for k in keys} == {k: policy["attributes"][k] for k in keys}
        text = src.request("GET", f"/api/v2/policies/{policy['id']}/download").content
        assert dst.request("GET", f"/api/v2/policies/{after[name]['id']}/download").content == text
    sets = by_name(dst, f"/api/v2/organizations/{ORG}/policy-sets")
    guard, legacy = sets["guardrails"], sets["legacy"]
    assert (guard["attributes"]["kind"], guard["attributes"]["overridable"]) == ("opa", True)
    assert guard["attributes"]["description"] == "no ACLs"

    def members(item: dict[str, Any], relation: str) -> list[str]:
        return [r["id"] for r in item["relationships"][relation]["data"]]

    assert members(guard, "policies") == [after["buckets"]["id"]]
    assert (members(guard, "workspaces"), members(guard, "projects")) == ([net_id], [project_id])
    assert (legacy["attributes"]["global"], members(legacy, "policies")) == (True, [after["always"]["id"]])
    params = {
        p["attributes"]["key"]: p["attributes"]
        for p in dst.request("GET", f"/api/v2/policy-sets/{guard['id']}/parameters").json()["data"]
    }
    assert params["env"]["value"] == "prod" and params["env"]["sensitive"] is False
    assert params["api_key"]["sensitive"] is True
    assert ("sensitive policy set parameter", "guardrails: api_key") in todo


def workspace(api: Api, name: str) -> dict[str, Any]:
    data: dict[str, Any] = api.request("GET", f"/api/v2/organizations/{ORG}/workspaces/{name}").json()["data"]
    return data


def count(api: Api, path: str) -> int:
    return len(api.request("GET", path).json()["data"])


def snapshot(api: Api) -> dict[str, int]:
    """How many of each object the target holds: a re-run must not change any of these."""
    ws = {
        w["attributes"]["name"]: w["id"]
        for w in api.request("GET", f"/api/v2/organizations/{ORG}/workspaces").json()["data"]
    }
    varsets = api.request("GET", f"/api/v2/organizations/{ORG}/varsets").json()["data"]
    return {
        "workspaces": len(ws),
        "projects": count(api, f"/api/v2/organizations/{ORG}/projects"),
        "teams": count(api, f"/api/v2/organizations/{ORG}/teams"),
        "varsets": len(varsets),
        "varset vars": sum(count(api, f"/api/v2/varsets/{v['id']}/relationships/vars") for v in varsets),
        "net vars": count(api, f"/api/v2/workspaces/{ws['net']}/vars"),
        "net states": count(
            api, f"/api/v2/state-versions?filter[organization][name]={ORG}&filter[workspace][name]=net"
        ),
        "team access": count(api, f"/api/v2/team-workspaces?filter[workspace][id]={ws['net']}"),
        "triggers": count(api, f"/api/v2/workspaces/{ws['app']}/run-triggers?filter[run-trigger][type]=inbound"),
    }


def cli(source: StackInfo, target: StackInfo, report: Path, *extra: str) -> tuple[int, str, dict[str, Any]]:
    args = ["migrate", "--from", source.url, "--from-token", source.token, "--organization", ORG]
    args += ["--to", target.url, "--to-token", target.token, "--report", str(report)]
    args += ["--ca-bundle", source.ca_bundle, "--ca-bundle", target.ca_bundle, *extra]
    result = CliRunner().invoke(app, args)
    assert report.exists(), f"{result.output}\n{result.exception!r}"
    return result.exit_code, result.output, json.loads(report.read_text())


def test_migrate_an_organization_between_two_servers(servers: tuple[StackInfo, StackInfo], tmp_path: Path) -> None:
    source, target = servers
    src, dst = Api(source), Api(target)
    populate(src, source, tmp_path)

    # a dry run prints the plan and writes nothing
    code, output, plan = cli(source, target, tmp_path / "plan.json", "--dry-run")
    assert code == 0, output
    assert "would create" in output and plan["status"] == "planned"
    planned = {(a["kind"], a["name"]) for a in plan["actions"] if a["action"] == "create"}
    assert {("organization", ORG), ("workspace", "net"), ("team", "devs"), ("run trigger", "net -> app")} <= planned
    history = src.request("GET", f"/api/v2/state-versions?filter[organization][name]={ORG}&filter[workspace][name]=net")
    serials = sorted(v["attributes"]["serial"] for v in history.json()["data"])
    assert len(serials) == 3 and {("state version", f"net #{n}") for n in serials} <= planned
    module = "private/acme/vpc/aws 1.2.0"
    assert {("policy", "buckets (opa)"), ("policy set", "legacy (sentinel)")} <= planned
    assert ("policy text", "always (sentinel)") in planned
    assert ("registry module version", module) in planned
    dst.request("GET", f"/api/v2/organizations/{ORG}", expect=404)

    # --workspaces and --state current narrow the plan
    code, output, narrow = cli(
        source, target, tmp_path / "narrow.json", "--dry-run", "--workspaces", "n*", "--state", "current"
    )
    assert code == 0, output
    kinds = {(a["kind"], a["name"]) for a in narrow["actions"]}
    assert {n for k, n in kinds if k == "workspace"} == {"net"}
    assert {n for k, n in kinds if k == "state version"} == {f"net #{serials[-1]}"}

    # a failure midway: the second state upload goes with a bad token; the report says what moved
    verify = ssl_context([source.ca_bundle, target.ca_bundle])
    failing = MigrateApi("target", target.url, target.token, verify)
    uploads = []

    def bad_token_once(request: httpx.Request) -> None:
        if request.method == "POST" and request.url.path.endswith("/state-versions"):
            uploads.append(request.url.path)
            if len(uploads) == 2:
                request.headers["Authorization"] = "Bearer not-a-token"

    failing.http.event_hooks["request"].append(bad_token_once)
    report = Report(source.url, target.url, ORG, dry_run=False)
    with pytest.raises(Exception, match="401"):
        Migration(MigrateApi("source", source.url, source.token, verify), failing, Options(ORG), report).run()
    moved = [a["name"] for a in report.actions if a["kind"] == "state version" and a["action"] == "create"]
    assert moved == [f"net #{serials[0]}"]
    assert workspace(dst, "net")["attributes"]["locked"] is False  # unlocked despite the failure

    # a failure through the command: the target's workspace is locked; the report says what moved and what failed
    dst.lock(workspace(dst, "net")["id"])
    try:
        code, output, failed = cli(source, target, tmp_path / "failed.json")
    finally:
        dst.unlock(workspace(dst, "net")["id"])
    assert code == 1 and failed["status"] == "failed" and "1 object(s) failed" in failed["error"], output
    assert {"kind": "workspace", "name": "app", "action": "skip"} in failed["actions"]  # from the first try
    fails = [a for a in failed["actions"] if a["action"] == "fail"]
    assert [(a["name"], "locked on the target" in a["detail"]) for a in fails] == [("net", True)]
    assert ("team", "devs") in {(a["kind"], a["name"]) for a in failed["actions"]}  # the rest went on

    # a killed migration leaves its lock on the target: the re-run takes it over (and unlocks at the end)
    dst.lock(workspace(dst, "net")["id"], reason=LOCK_REASON)

    # the re-run resumes: the first version is skipped, the rest uploaded
    code, output, done = cli(source, target, tmp_path / "report.json")
    assert code == 0, output
    assert done["status"] == "done"
    states = {a["name"]: a["action"] for a in done["actions"] if a["kind"] == "state version"}
    assert any("resuming under the lock" in w for w in done["warnings"])
    assert workspace(dst, "net")["attributes"]["locked"] is False
    assert states == dict(zip((f"net #{n}" for n in serials), ("skip", "create", "create"), strict=True))
    todo = {(t["kind"], t["name"]) for t in done["todo"]}
    assert ("sensitive variable", "workspace net: DB_PASSWORD (env)") in todo
    assert ("notification", "net: deploys") in todo and ("agent pool", "onprem: dc1") in todo

    # terraform on the target reads the same state, byte for byte
    pulled = {}
    for name, stack in (("src", source), ("dst", target)):
        tf = workdir(tmp_path, stack, f"pull-{name}", backend(stack, "net") + outputs(answer=3, label="v3"))
        tf.init()
        pulled[name] = tf.run("state", "pull").stdout
        if name == "dst":
            assert "No changes." in tf.run("plan", "-input=false", "-no-color", "-detailed-exitcode").output
    assert pulled["dst"] == pulled["src"] and json.loads(pulled["dst"])["serial"] == serials[-1]

    # the API shows the workspace's settings, variables, set, team access and trigger
    net = workspace(dst, "net")
    attrs = net["attributes"]
    assert (attrs["execution-mode"], attrs["working-directory"], attrs["auto-apply"]) == ("local", "infra", True)
    assert sorted(attrs["tag-names"]) == ["eu", "prod"] and attrs["description"] == "the network"
    projects = dst.request("GET", f"/api/v2/organizations/{ORG}/projects").json()["data"]
    assert net["relationships"]["project"]["data"]["id"] == next(
        p["id"] for p in projects if p["attributes"]["name"] == "platform"
    )
    variables = {
        v["attributes"]["key"]: v["attributes"]
        for v in dst.request("GET", f"/api/v2/workspaces/{net['id']}/vars").json()["data"]
    }
    assert variables["region"]["value"] == "eu-west-1" and variables["region"]["description"] == "region!"
    assert variables["DB_PASSWORD"]["sensitive"] is True and variables["DB_PASSWORD"]["category"] == "env"
    org = dst.request("GET", f"/api/v2/organizations/{ORG}").json()["data"]["attributes"]
    assert org["default-execution-mode"] == "local"
    hooks = dst.request("GET", f"/api/v2/workspaces/{net['id']}/notification-configurations").json()["data"]
    assert [(h["attributes"]["name"], h["attributes"]["enabled"]) for h in hooks] == [("deploys", False)]
    assert hooks[0]["attributes"]["url"] == "https://hooks.example.com/t"
    consumers = dst.request("GET", f"/api/v2/workspaces/{net['id']}/relationships/remote-state-consumers")
    assert [c["id"] for c in consumers.json()["data"]] == [workspace(dst, "app")["id"]]
    platform = next(p["id"] for p in projects if p["attributes"]["name"] == "platform")
    grants = dst.request("GET", f"/api/v2/team-projects?filter[project][id]={platform}").json()["data"]
    assert [g["attributes"]["access"] for g in grants] == ["maintain"]
    policy_checks(src, dst, net["id"], platform, todo)
    assert ("SSH key", "deploy") in todo and "re-enter the value" in next(
        t["what"] for t in done["todo"] if t["kind"] == "SSH key"
    )
    assert dst.request("GET", f"/api/v2/organizations/{ORG}/ssh-keys").json()["data"] == []  # nothing made up
    assert module_archive(dst, ORG, "vpc", "aws", "1.2.0") == module_archive(src, ORG, "vpc", "aws", "1.2.0")
    assert {"kind": "registry module version", "name": module, "action": "create"} in [
        {k: a[k] for k in ("kind", "name", "action")} for a in done["actions"] + failed["actions"]
    ]
    before = snapshot(dst)
    assert before["varsets"] == 1 and before["varset vars"] == 1 and before["team access"] == 1
    assert before["triggers"] == 1 and before["net states"] == 3

    # a second run changes nothing and duplicates nothing; a workspace locked on the source is skipped
    app_ws = workspace(src, "app")
    src.lock(app_ws["id"])
    try:
        code, output, again = cli(source, target, tmp_path / "again.json")
    finally:
        src.unlock(app_ws["id"])
    assert code == 0, output
    assert {a["action"] for a in again["actions"]} == {"skip"}, output
    assert any("app is locked on the source" in w for w in again["warnings"])
    assert snapshot(dst) == before

    # once the agent pool and the SSH key exist on the target, a re-run assigns them
    key = {"data": {"type": "ssh-keys", "attributes": {"name": "deploy", "value": "re-entered by a person"}}}
    key_id = dst.request("POST", f"/api/v2/organizations/{ORG}/ssh-keys", key, expect=201).json()["data"]["id"]
    pool = dst.request(
        "POST",
        f"/api/v2/organizations/{ORG}/agent-pools",
        {"data": {"type": "agent-pools", "attributes": {"name": "dc1"}}},
        expect=201,
    ).json()["data"]
    code, output, pooled = cli(source, target, tmp_path / "pooled.json", "--workspaces", "[no]*")
    assert code == 0, output
    assert [(a["name"], a["action"]) for a in pooled["actions"] if a["kind"] == "workspace"] == [
        ("net", "skip"),
        ("onprem", "update"),
    ]
    assert {"kind": "workspace SSH key", "name": "net -> deploy", "action": "create"} in pooled["actions"]
    assert workspace(dst, "net")["relationships"]["ssh-key"]["data"]["id"] == key_id
    onprem = workspace(dst, "onprem")
    assert onprem["attributes"]["execution-mode"] == "agent"
    assert onprem["relationships"]["agent-pool"]["data"]["id"] == pool["id"]

    # against a server without the lineage attribute (either side), versions are matched by their files' lineage
    for bare in ("source", "target"):
        apis = [
            MigrateApi(side, stack.url, stack.token, verify, WithoutLineage(verify=verify) if side == bare else None)
            for side, stack in (("source", source), ("target", target))
        ]
        check = Report(source.url, target.url, ORG, dry_run=True)
        Migration(apis[0], apis[1], Options(ORG, workspaces="net", dry_run=True), check).run()
        versions = [a for a in check.actions if a["kind"] == "state version"]
        assert [a["action"] for a in versions] == ["skip"] * 3, bare
        assert {a["action"] for a in check.actions} == {"skip"}, bare


# an interrupted migration into the run stack: killed midway through a state history, resumed, then planned ---
GATED = """
import sys, time
from pathlib import Path
from terrace.cli import app
from terrace.migrate import states

gate, after, real, done = Path(sys.argv[1]), int(sys.argv[2]), states.upload, []


def upload(*args, **kwargs):
    real(*args, **kwargs)
    done.append(1)
    if len(done) == after:  # hold here, the state history half copied, until the test kills this process
        gate.write_text(str(after))
        time.sleep(600)


states.upload = upload
sys.argv = ["terrace", *sys.argv[3:]]
app()
"""
VERSIONS, KILL_AFTER = 5, 2


def state_file(serial: int, lineage: str) -> bytes:
    state = {"version": 4, "terraform_version": "1.0.3", "serial": serial, "lineage": lineage, "resources": []}
    state["outputs"] = {"answer": {"value": serial, "type": "number"}}
    return (json.dumps(state, indent=2) + "\n").encode()


def history(api: Api, org: str, name: str) -> list[tuple[int, str, bytes]]:
    """(serial, lineage, file) of every state version, oldest first."""
    path = f"/api/v2/state-versions?filter[organization][name]={org}&filter[workspace][name]={name}&page[size]=100"
    found = []
    for v in api.request("GET", path).json()["data"]:
        attrs = v["attributes"]
        # the download answers 302 to the blob's signed URL (waiting out a 429 first); the blob is read without the
        # API token, as terraform reads it
        located = api.request("GET", attrs["hosted-state-download-url"], expect=302)
        with httpx.Client(verify=ssl.create_default_context(cafile=api.stack.ca_bundle), timeout=30) as blobs:
            blob = blobs.get(located.headers["location"])
        assert blob.status_code == 200 and blob.content, f"{located.headers['location']}: {blob.status_code}"
        found.append((attrs["serial"], attrs["lineage"], blob.content))
    return sorted(found)


def workspace_in(api: Api, org: str, name: str) -> dict[str, Any]:
    data: dict[str, Any] = api.request("GET", f"/api/v2/organizations/{org}/workspaces/{name}").json()["data"]
    return data


def test_a_killed_migration_resumes_and_a_remote_plan_on_the_target_shows_no_changes(
    servers: tuple[StackInfo, StackInfo], run_stack: StackInfo, tmp_path: Path
) -> None:
    source = servers[0]
    src, dst = Api(source), Api(run_stack)
    org = f"move-{uuid.uuid4().hex[:8]}"
    body = {"data": {"type": "organizations", "attributes": {"name": org, "email": "ops@example.com"}}}
    src.request("POST", "/api/v2/organizations", body, expect=201)
    attrs = {"name": "svc", "execution-mode": "remote", "terraform-version": "1.0.3"}
    ws = src.request(
        "POST", f"/api/v2/organizations/{org}/workspaces", {"data": {"type": "workspaces", "attributes": attrs}}, 201
    ).json()["data"]
    src.lock(ws["id"])
    lineage = str(uuid.uuid4())
    for serial in range(1, VERSIONS + 1):
        state = state_file(serial, lineage)
        version = {"serial": serial, "lineage": lineage, "md5": hashlib.md5(state).hexdigest()}  # noqa: S324
        version["state"] = base64.b64encode(state).decode()
        body = {"data": {"type": "state-versions", "attributes": version}}
        src.request("POST", f"/api/v2/workspaces/{ws['id']}/state-versions", body, expect=201)
    src.unlock(ws["id"])

    # `terrace migrate` in its own process, SIGKILLed once the target holds some but not all of the versions
    args = ["migrate", "--from", source.url, "--from-token", source.token, "--organization", org]
    args += ["--to", run_stack.url, "--to-token", run_stack.token]
    args += ["--ca-bundle", source.ca_bundle, "--ca-bundle", run_stack.ca_bundle]
    gate = tmp_path / "gate"
    env = {**os.environ, "PYTHONPATH": str(Path(terrace.__file__).parents[1])}
    process = subprocess.Popen(
        [sys.executable, "-c", GATED, str(gate), str(KILL_AFTER), *args],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while not gate.exists() and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert gate.exists(), f"the migration never reached its state history: {process.poll()}"
        assert len(history(dst, org, "svc")) == KILL_AFTER  # some, not all
        process.send_signal(signal.SIGKILL)
    finally:
        process.kill()
        output, _ = process.communicate(timeout=30)
    assert process.returncode == -signal.SIGKILL, output
    assert workspace_in(dst, org, "svc")["attributes"]["locked"] is True  # the killed migration's lock

    # the re-run takes over the lock, uploads the rest, and leaves the history whole, in order, unduplicated
    report = tmp_path / "resumed.json"
    result = CliRunner().invoke(app, [*args, "--report", str(report)])
    resumed = json.loads(report.read_text())
    assert result.exit_code == 0 and resumed["status"] == "done", result.output
    assert any("resuming under the lock" in w for w in resumed["warnings"])
    states = [(a["name"], a["action"]) for a in resumed["actions"] if a["kind"] == "state version"]
    expected = ["skip"] * KILL_AFTER + ["create"] * (VERSIONS - KILL_AFTER)
    assert states == [(f"svc #{n}", action) for n, action in zip(range(1, VERSIONS + 1), expected, strict=True)]
    assert history(dst, org, "svc") == history(src, org, "svc")
    target_ws = workspace_in(dst, org, "svc")["attributes"]
    assert (target_ws["locked"], target_ws["execution-mode"], target_ws["terraform-version"]) == (
        False,
        "remote",
        "1.0.3",
    )

    # terraform reads the same state on both servers, and a remote plan on the target (its runners) changes nothing
    pulled = {}
    for side, stack in (("src", source), ("dst", run_stack)):
        main_tf = StackInfo(**{**stack.__dict__, "organization": org}).remote_backend(name="svc")
        tf = workdir(tmp_path, stack, f"svc-{side}", main_tf + outputs(answer=VERSIONS))
        tf.init()
        pulled[side] = tf.run("state", "pull").stdout
        if side == "dst":
            plan = tf.run("plan", "-input=false", "-no-color", timeout=RUN_TIMEOUT_S).output
            assert "Running plan in the remote backend" in plan and "Terrace runner" in plan, plan
            assert "No changes." in plan, plan
    assert pulled["dst"] == pulled["src"] and json.loads(pulled["dst"])["serial"] == VERSIONS
