"""No-code provisioning (HCP Terraform's `POST /no-code-modules/:id/workspaces` and `.../workspaces/:ws/upgrade`,
go-tfe's `CreateWorkspace` and `UpgradeWorkspace`; v1.109's `TestOrganizationsReadWithBusiness` reads
`can-deploy-no-code-modules`): a workspace whose configuration is a generated root module calling the module's
pinned version from the private registry, its variables, and a queued run; who may deploy; upgrades."""

from __future__ import annotations

from typing import Any

import pytest
from policy_helpers import call, member
from run_helpers import RunEnv, make_run_env, tarball
from terrace.domain.bounded_tar import TarBounds, read_files
from terrace.domain.errors import Invalid
from terrace.domain.no_code_provisioning import check_vars, root_module
from terrace.domain.principal import PrincipalKind

MODULE = {
    "main.tf": 'variable "region" {\n  type = string\n}\n'
    'variable "size" {\n  type    = number\n  default = 1\n}\n'
    'variable "secret" {\n  type      = string\n  default   = ""\n  sensitive = true\n}\n'
    'output "arn" {\n  value = "arn:${var.region}"\n}\n'
    'output "token" {\n  value     = var.secret\n  sensitive = true\n}\n'
}
OPTIONS = [{"variable-name": "region", "variable-type": "string", "options": ["eu-west-1", "us-east-1"]}]


def _var(key: str, value: str, **attrs: Any) -> dict[str, Any]:
    return {"type": "vars", "attributes": {"key": key, "value": value, "category": "terraform", **attrs}}


def _publish(env: RunEnv, version: str) -> None:
    body = {"data": {"type": "registry-module-versions", "attributes": {"version": version}}}
    created = env.api("POST", "/registry-modules/acme/vpc/aws/versions", body)
    assert created.status_code == 201, created.text
    env.land(created.json()["data"]["links"]["upload"].split("memory://blobs/")[1].split("?")[0], tarball(MODULE))


@pytest.fixture(scope="module")
def env() -> RunEnv:
    env = make_run_env()
    module = {"data": {"type": "registry-modules", "attributes": {"name": "vpc", "provider": "aws"}}}
    assert env.api("POST", "/organizations/acme/registry-modules", module).status_code == 201
    _publish(env, "1.0.0")
    return env


@pytest.fixture(scope="module")
def ncm_id(env: RunEnv) -> str:
    module_id = env.api("GET", "/organizations/acme/registry-modules/private/acme/vpc/aws").json()["data"]["id"]
    relationships = {
        "registry-module": {"data": {"type": "registry-modules", "id": module_id}},
        "variable-options": {"data": [{"type": "variable-options", "attributes": o} for o in OPTIONS]},
    }
    body = {"data": {"type": "no-code-modules", "attributes": {"version-pin": "1.0.0"}, "relationships": relationships}}
    created = env.api("POST", "/organizations/acme/no-code-modules", body)
    assert created.status_code == 201, created.text
    return str(created.json()["data"]["id"])


def _provision(
    env: RunEnv, ncm_id: str, name: str, variables: list[Any], token: str | None = None, **attrs: Any
) -> Any:
    body = {"data": {"type": "no-code-module-workspace", "attributes": {"name": name, **attrs},
                     "relationships": {"vars": {"data": variables}}}}  # fmt: skip
    if token is None:
        return env.api("POST", f"/no-code-modules/{ncm_id}/workspaces", body)
    return call(env, token, "POST", f"/no-code-modules/{ncm_id}/workspaces", body)


def _main_tf(env: RunEnv, ws_id: str) -> str:
    """The configuration of the workspace's newest run."""
    (run, *_) = env.api("GET", f"/workspaces/{ws_id}/runs").json()["data"]
    cv_id = run["relationships"]["configuration-version"]["data"]["id"]
    archive = env.api("GET", f"/configuration-versions/{cv_id}/download", follow_redirects=False)
    key = archive.headers["location"].split("memory://blobs/")[1].split("?")[0]
    bounds = TarBounds("a configuration", 1 << 20, files_max=10, total_max=1 << 20, file_max=1 << 20)
    return read_files(env.blobs.get(key), bounds, "/")["main.tf"].decode()


def test_who_may_deploy_no_code_modules(env: RunEnv) -> None:
    """Owners and who may create workspaces may deploy; readers and organization tokens may not."""
    perms = env.api("GET", "/organizations/acme").json()["data"]["attributes"]["permissions"]
    assert perms["can-deploy-no-code-modules"] is True and perms["can-manage-no-code-modules"] is True
    deployer = member(env, "deployer", **{"manage-workspaces": True})
    reader = member(env, "reader")
    org_token = env.api("POST", "/organizations/acme/authentication-token", {"data": {"type": "authentication-token"}})
    for token, may in ((deployer, True), (reader, False), (org_token.json()["data"]["attributes"]["token"], False)):
        read = call(env, token, "GET", "/organizations/acme").json()["data"]["attributes"]["permissions"]
        assert read["can-deploy-no-code-modules"] is may


def test_a_workspace_is_provisioned_from_the_pinned_version_with_its_variables_and_a_run(
    env: RunEnv, ncm_id: str
) -> None:
    made = _provision(env, ncm_id, "net-1", [_var("region", "eu-west-1"), _var("secret", "s3cr3t", sensitive=True)],
                      **{"source-name": "my-app", "source-url": "http://my-app.example", "execution-mode": "remote",
                         "auto-apply": True, "description": "made without code"})  # fmt: skip
    assert made.status_code == 200, made.text
    ws = made.json()["data"]
    attrs = ws["attributes"]
    assert (attrs["name"], attrs["source"], attrs["source-module-id"]) == ("net-1", "tfe-module",
                                                                           "private/acme/vpc/aws/1.0.0")  # fmt: skip
    assert (attrs["source-name"], attrs["source-url"], attrs["execution-mode"]) == (
        "my-app", "http://my-app.example", "remote")  # fmt: skip
    assert attrs["auto-apply"] is True and attrs["description"] == "made without code"
    assert env.api("GET", "/organizations/acme/workspaces/net-1").json()["data"]["attributes"]["source-module-id"] == (
        "private/acme/vpc/aws/1.0.0"
    )
    variables = {
        v["attributes"]["key"]: v["attributes"] for v in env.api("GET", f"/workspaces/{ws['id']}/vars").json()["data"]
    }
    assert variables["region"]["value"] == "eu-west-1" and variables["secret"]["value"] is None  # sensitive
    (run,) = env.api("GET", f"/workspaces/{ws['id']}/runs").json()["data"]
    assert run["attributes"]["status"] in ("pending", "plan_queued") and run["attributes"]["auto-apply"] is True
    main_tf = _main_tf(env, ws["id"])
    assert (
        'source  = "127.0.0.1:8443/acme/vpc/aws"' in main_tf
    )  # a host terraform reads as one (with a dot) and 'version = "1.0.0"' in main_tf
    assert "region = var.region" in main_tf and "secret = var.secret" in main_tf
    assert "s3cr3t" not in main_tf  # a sensitive value stays a workspace variable
    assert 'output "token" {\n  value = module.vpc.token\n  sensitive = true\n}' in main_tf
    assert "size" not in main_tf  # an input left to its default


@pytest.mark.parametrize(
    ("variables", "attrs", "words"),
    [
        ([_var("nope", "x"), _var("region", "eu-west-1")], {}, "no input nope"),
        ([], {}, "required inputs need a value: region"),
        ([_var("region", "mars-1")], {}, "must be one of eu-west-1, us-east-1"),
        ([_var("region", '"us-east-1"', hcl=True), _var("bad key", "x")], {}, "terraform variable's key"),
        ([_var("region", "eu-west-1", category="vault")], {}, "category"),
        ([_var("region", "eu-west-1", sensitive="yes")], {}, "sensitive"),
        ([_var("region", "eu-west-1")], {"vcs-repo": {}}, "unknown attribute vcs-repo"),
        ([_var("region", "eu-west-1")], {"execution-mode": "elsewhere"}, "execution-mode"),
        ([_var("region", "eu-west-1")], {"iac-platform": "pulumi"}, "iac-platform must be one of"),
        ("all", {}, "vars must be a list"),
        ([_var("region", "eu-west-1")], {"execution-mode": "local"}, "not locally"),
        ([_var("region", "eu-west-1", description="d" * 513)], {}, "description"),
    ],
)
def test_bad_requests_are_422_and_make_no_workspace(
    env: RunEnv, ncm_id: str, variables: Any, attrs: dict[str, Any], words: str
) -> None:
    answer = _provision(env, ncm_id, "never", variables, **attrs)
    assert answer.status_code == 422, answer.text
    assert words in answer.json()["errors"][0]["detail"]
    assert env.api("GET", "/organizations/acme/workspaces/never").status_code == 404


def test_who_may_create_workspaces_deploys(env: RunEnv, ncm_id: str) -> None:
    deployer = member(env, "deployer2", **{"manage-workspaces": True})
    made = _provision(env, ncm_id, "by-deployer", [_var("region", "us-east-1")], token=deployer)
    assert made.status_code == 200, made.text
    assert made.json()["data"]["attributes"]["source"] == "tfe-module"


def test_who_may_not_deploy_gets_no_workspace(env: RunEnv, ncm_id: str) -> None:
    reader = member(env, "reader2")
    assert _provision(env, ncm_id, "nope-1", [_var("region", "eu-west-1")], token=reader).status_code == 403
    org_token = env.api("POST", "/organizations/acme/authentication-token", {"data": {"type": "authentication-token"}})
    token = org_token.json()["data"]["attributes"]["token"]
    assert _provision(env, ncm_id, "nope-2", [_var("region", "eu-west-1")], token=token).status_code == 403
    stranger = env.container.accounts.create_user("mallory2", "m2@example.com")
    secret = env.container.accounts.issue_token(PrincipalKind.USER, stranger.id).secret
    assert _provision(env, ncm_id, "nope-3", [_var("region", "eu-west-1")], token=secret).status_code == 404
    assert _provision(env, "nocode-abc123XYZ", "nope-4", []).status_code == 404
    for name in ("nope-1", "nope-2", "nope-3", "nope-4"):
        assert env.api("GET", f"/organizations/acme/workspaces/{name}").status_code == 404


def test_an_upgrade_plans_the_newly_pinned_version(env: RunEnv, ncm_id: str) -> None:
    ws = _provision(env, ncm_id, "net-up", [_var("region", "eu-west-1")]).json()["data"]
    _publish(env, "1.1.0")
    pin = {"data": {"type": "no-code-modules", "attributes": {"version-pin": "1.1.0"}}}
    assert env.api("PATCH", f"/no-code-modules/{ncm_id}", pin).status_code == 200
    try:
        body = {
            "data": {
                "type": "no-code-module-workspace",
                "relationships": {"vars": {"data": [_var("region", "us-east-1")]}},
            }
        }
        upgraded = env.api("POST", f"/no-code-modules/{ncm_id}/workspaces/{ws['id']}/upgrade", body)
        assert upgraded.status_code == 200, upgraded.text
        doc = upgraded.json()["data"]
        assert doc["type"] == "workspace-upgrade" and doc["id"].startswith("run-") and doc["attributes"]["status"]
        assert doc["attributes"]["plan-url"].endswith(f"/app/acme/workspaces/net-up/runs/{doc['id']}")
        assert doc["relationships"]["workspace"]["data"]["id"] == ws["id"]
        main_tf = _main_tf(env, ws["id"])
        assert 'version = "1.1.0"' in main_tf
        read = env.api("GET", f"/workspaces/{ws['id']}").json()["data"]["attributes"]
        assert read["source-module-id"] == "private/acme/vpc/aws/1.1.0"
        variables = {
            v["attributes"]["key"]: v["attributes"]["value"]
            for v in env.api("GET", f"/workspaces/{ws['id']}/vars").json()["data"]
        }
        assert variables["region"] == "us-east-1"
        upgrade = f"/no-code-modules/{ncm_id}/workspaces/{ws['id']}/upgrade"
        status = env.api("GET", f"{upgrade}/{doc['id']}")
        assert (
            status.status_code == 200 and status.json()["data"]["attributes"]["status"] == doc["attributes"]["status"]
        )
        early = env.api("POST", f"{upgrade}/{doc['id']}")  # confirmed before its plan: refused as for any run
        assert early.status_code == 409, early.text
        other_ws = _provision(env, ncm_id, "net-other", [_var("region", "eu-west-1")]).json()["data"]
        (other_run,) = env.api("GET", f"/workspaces/{other_ws['id']}/runs").json()["data"]
        for elsewhere in (other_run["id"], "run-nowhere123456"):
            assert env.api("GET", f"{upgrade}/{elsewhere}").status_code == 404  # not this workspace's run
        other = env.workspace_id  # not provisioned from it
        assert env.api("POST", f"/no-code-modules/{ncm_id}/workspaces/{other}/upgrade", {}).status_code == 404
        assert (
            env.api("POST", f"/no-code-modules/{ncm_id}-invalid/workspaces/{ws['id']}/upgrade", {}).status_code == 404
        )
        assert (
            env.api("POST", f"/no-code-modules/{ncm_id}/workspaces/{ws['id']}-invalid/upgrade", {}).status_code == 404
        )
    finally:  # the other tests provision the version pinned first
        back = {"data": {"type": "no-code-modules", "attributes": {"version-pin": "1.0.0"}}}
        assert env.api("PATCH", f"/no-code-modules/{ncm_id}", back).status_code == 200


def test_the_generated_root_module_names_only_identifiers() -> None:
    text = root_module("h/acme/m/aws", "1.0.0", "my.mod", [], [{"name": "ok"}, {"name": 'bad"name'}])
    assert 'module "main" {' in text and 'output "ok"' in text and "bad" not in text


def test_a_key_with_a_trailing_newline_is_no_identifier() -> None:
    """`$` matches before a final newline: the identifier is matched whole (a version without known inputs
    would otherwise write `variable "region\n"` into the generated configuration)."""
    assert check_vars([_var("region", "eu-west-1")])[0]["key"] == "region"
    with pytest.raises(Invalid):
        check_vars([_var("region\n", "eu-west-1")])


def test_an_upgrade_refuses_a_workspace_variable_that_is_no_identifier_and_writes_nothing(
    env: RunEnv, ncm_id: str
) -> None:
    """The variables API takes any key (TFC's); an upgrade passes each terraform variable to the module by name, so
    a key with quotes and spaces would be written into the generated HCL: refused, before any write or run."""
    ws = _provision(env, ncm_id, "net-quoted", [_var("region", "eu-west-1")]).json()["data"]
    key = 'size = 9 }\nresource "null_resource" "x" { count = 1'.replace("\n", " ")
    created = env.api("POST", f"/workspaces/{ws['id']}/vars", {"data": {"type": "vars", "attributes": {
        "key": key, "value": "1", "category": "terraform"}}})  # fmt: skip
    assert created.status_code == 201, created.text
    runs = len(env.api("GET", f"/workspaces/{ws['id']}/runs").json()["data"])
    body = {"data": {"type": "no-code-module-workspace", "relationships": {"vars": {"data": [
        _var("region", "us-east-1")]}}}}  # fmt: skip
    answer = env.api("POST", f"/no-code-modules/{ncm_id}/workspaces/{ws['id']}/upgrade", body)
    assert answer.status_code == 422, answer.text
    assert "cannot be a module argument" in answer.json()["errors"][0]["detail"]
    assert len(env.api("GET", f"/workspaces/{ws['id']}/runs").json()["data"]) == runs
    values = {v["attributes"]["key"]: v["attributes"]["value"]
              for v in env.api("GET", f"/workspaces/{ws['id']}/vars").json()["data"]}  # fmt: skip
    assert values["region"] == "eu-west-1"  # nothing written
    assert "null_resource" not in _main_tf(env, ws["id"])


def test_the_generated_root_module_interpolates_nothing_and_refuses_a_bad_key() -> None:
    text = root_module("h/acme/m/aws", "1.0.0", "m", [], [])
    assert 'source  = "h/acme/m/aws"' in text and 'version = "1.0.0"' in text
    text = root_module("h/${x}/m/aws", "%{ if true }1", "m", [], [])  # never reaches it: still no template
    assert "${x}" not in text.replace("$${x}", "") and "%{ if" not in text.replace("%%{ if", "")
    with pytest.raises(Invalid):
        root_module("h/acme/m/aws", "1.0.0", "m", [{"key": 'a" b', "category": "terraform", "sensitive": False}], [])


def test_a_disabled_designation_provisions_nothing(env: RunEnv, ncm_id: str) -> None:
    switch = lambda on: {"data": {"type": "no-code-modules", "attributes": {"enabled": on}}}  # noqa: E731
    assert env.api("PATCH", f"/no-code-modules/{ncm_id}", switch(False)).status_code == 200
    try:
        answer = _provision(env, ncm_id, "off-1", [_var("region", "eu-west-1")])
        assert answer.status_code == 422 and "disabled" in answer.json()["errors"][0]["detail"]
        assert env.api("GET", "/organizations/acme/workspaces/off-1").status_code == 404
    finally:
        assert env.api("PATCH", f"/no-code-modules/{ncm_id}", switch(True)).status_code == 200


def test_the_module_variables_of_a_version_carry_their_options(env: RunEnv, ncm_id: str) -> None:
    """go-tfe's `ReadVariables`: a published version's inputs, each with the designation's options for it."""
    read = env.api("GET", f"/no-code-modules/{ncm_id}/versions/1.0.0/module-variables")
    assert read.status_code == 200, read.text
    found = {v["attributes"]["name"]: v for v in read.json()["data"]}
    assert set(found) == {"region", "size", "secret"}
    region = found["region"]
    assert region["type"] == "registry-module-variables" and region["id"].startswith("rmvar-")
    assert (region["attributes"]["type"], region["attributes"]["required"]) == ("string", True)
    assert region["attributes"]["options"] == ["eu-west-1", "us-east-1"]
    assert found["secret"]["attributes"]["sensitive"] is True and found["size"]["attributes"]["required"] is False
    assert env.api("GET", f"/no-code-modules/{ncm_id}/versions/9.9.9/module-variables").status_code == 404
    stranger = env.container.accounts.create_user("mallory3", "m3@example.com")
    secret = env.container.accounts.issue_token(PrincipalKind.USER, stranger.id).secret
    assert call(env, secret, "GET", f"/no-code-modules/{ncm_id}/versions/1.0.0/module-variables").status_code == 404


def test_a_workspace_is_provisioned_in_the_project_named(env: RunEnv, ncm_id: str) -> None:
    """HCP's documents spell the project's type `project`, go-tfe sends `projects`: both name it."""
    body = {"data": {"type": "projects", "attributes": {"name": "platform"}}}
    project = env.api("POST", "/organizations/acme/projects", body).json()["data"]
    for kind, name in (("project", "in-project-1"), ("projects", "in-project-2")):
        request = {"data": {"type": "workspaces", "attributes": {"name": name}, "relationships": {
            "project": {"data": {"type": kind, "id": project["id"]}},
            "vars": {"data": [_var("region", "eu-west-1")]}}}}  # fmt: skip
        made = env.api("POST", f"/no-code-modules/{ncm_id}/workspaces", request)
        assert made.status_code == 200, made.text
        assert made.json()["data"]["relationships"]["project"]["data"]["id"] == project["id"]
    bad = {"data": {"type": "workspaces", "attributes": {"name": "x-1"}, "relationships": {
        "project": {"data": {"type": "teams", "id": project["id"]}}}}}  # fmt: skip
    assert env.api("POST", f"/no-code-modules/{ncm_id}/workspaces", bad).status_code == 422
    elsewhere = {"data": {"type": "workspaces", "attributes": {"name": "x-2"}, "relationships": {
        "project": {"data": {"type": "projects", "id": "prj-nowhere123456"}},
        "vars": {"data": [_var("region", "eu-west-1")]}}}}  # fmt: skip
    assert env.api("POST", f"/no-code-modules/{ncm_id}/workspaces", elsewhere).status_code == 404
    assert env.api("POST", f"/no-code-modules/{ncm_id}/workspaces", {"data": {"type": "runs"}}).status_code == 422


def test_an_inherited_local_execution_mode_becomes_remote(env: RunEnv, ncm_id: str) -> None:
    """The organization's default is local: the provisioned workspace still runs here, as HCP's no-code ones do."""
    local = {"data": {"type": "organizations", "attributes": {"default-execution-mode": "local"}}}
    assert env.api("PATCH", "/organizations/acme", local).status_code == 200
    try:
        made = _provision(env, ncm_id, "from-local", [_var("region", "eu-west-1")])
        assert made.status_code == 200, made.text
        assert made.json()["data"]["attributes"]["execution-mode"] == "remote"
        (run,) = env.api("GET", f"/workspaces/{made.json()['data']['id']}/runs").json()["data"]
        assert run["attributes"]["status"] in ("pending", "plan_queued")
    finally:
        remote = {"data": {"type": "organizations", "attributes": {"default-execution-mode": "remote"}}}
        assert env.api("PATCH", "/organizations/acme", remote).status_code == 200


def test_a_workspace_is_provisioned_with_the_tool_asked_for(env: RunEnv, ncm_id: str) -> None:
    """`iac-platform` as on the workspace API: its runs resolve their version among that tool's releases."""
    versions = {}
    for tool in ("opentofu", "terraform"):
        made = _provision(env, ncm_id, f"with-{tool}", [_var("region", "eu-west-1")], **{"iac-platform": tool})
        assert made.status_code == 200, made.text
        ws = made.json()["data"]
        assert ws["attributes"]["iac-platform"] == tool
        assert env.api("GET", f"/workspaces/{ws['id']}").json()["data"]["attributes"]["iac-platform"] == tool
        (run,) = env.api("GET", f"/workspaces/{ws['id']}/runs").json()["data"]
        assert run["attributes"]["status"] in ("pending", "plan_queued"), run["attributes"]
        versions[tool] = run["attributes"]["terraform-version"]
    assert versions["opentofu"] != versions["terraform"]  # each its own tool's newest
