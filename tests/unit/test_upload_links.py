"""A pending object's upload link goes to its creator's answer and to callers who may publish it (`manage-policies`,
`manage-modules`, `manage-providers`, decided by the Authorizer in the services), never to a read-only member, the
run token of a running job (which reads the registry to install modules) or an agent token. A reader who never
learns the link cannot replace what the owner is about to upload, and the owner's upload goes through."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from run_helpers import RunEnv, join, make_run_env, tarball
from state_helpers import Env, blob_url_path, embedded_env
from terrace.domain.principal import PrincipalKind
from upload_capabilities import capabilities

POLICIES_HCL = 'policy "ok" {\n  query = "data.terraform.policies.ok.deny"\n  enforcement_level = "advisory"\n}\n'
OK_REGO = 'package terraform.policies.ok\nimport rego.v1\ndeny contains msg if { false; msg := "never" }\n'
PROVIDER = "/organizations/acme/registry-providers/private/acme/hello"


def _ok(response: Any, status: int = 201) -> dict[str, Any]:
    assert response.status_code == status, response.text
    return dict(response.json()["data"])


def _pending_everything(env: RunEnv) -> dict[str, str]:
    """A pending policy set version, module version, provider version and platform; the read paths of each."""
    ps = _ok(env.api("POST", "/organizations/acme/policy-sets", {"data": {"type": "policy-sets",
             "attributes": {"name": "guards", "kind": "opa"}}}))  # fmt: skip
    psv = _ok(env.api("POST", f"/policy-sets/{ps['id']}/versions"))
    assert psv["links"]["upload"]  # the creator's answer
    _ok(env.api("POST", "/organizations/acme/registry-modules", {"data": {"type": "registry-modules",
        "attributes": {"name": "vpc", "provider": "aws"}}}))  # fmt: skip
    body = {"data": {"type": "registry-module-versions", "attributes": {"version": "1.0.0"}}}
    assert _ok(env.api("POST", "/registry-modules/acme/vpc/aws/versions", body))["links"]["upload"]
    _ok(env.api("POST", "/organizations/acme/registry-providers", {"data": {"type": "registry-providers",
        "attributes": {"name": "hello", "namespace": "acme", "registry-name": "private"}}}))  # fmt: skip
    attrs = {"version": "1.0.0", "key-id": "ABCDEF0123456789", "protocols": ["5.0"]}
    made = _ok(env.api("POST", f"{PROVIDER}/versions", {"data": {"type": "registry-provider-versions",
               "attributes": attrs}}))  # fmt: skip
    assert made["links"]["shasums-upload"] and made["links"]["shasums-sig-upload"]
    attrs = {"os": "linux", "arch": "amd64", "shasum": "0" * 64, "filename": "terraform-provider-hello_1.0.0.zip"}
    platform = _ok(env.api("POST", f"{PROVIDER}/versions/1.0.0/platforms", {"data": {
        "type": "registry-provider-platforms", "attributes": attrs}}))  # fmt: skip
    assert platform["links"]["provider-binary-upload"]
    return {
        "policy set version": f"/policy-set-versions/{psv['id']}",
        "policy set with its versions": f"/policy-sets/{ps['id']}?include=current_version,newest_version",
        "policy sets with their versions": "/organizations/acme/policy-sets?include=newest_version",
        "module version": "/organizations/acme/registry-modules/private/acme/vpc/aws/version?module_version=1.0.0",
        "provider version": f"{PROVIDER}/versions/1.0.0",
        "provider versions": f"{PROVIDER}/versions",
        "provider with its versions": f"{PROVIDER}?include=registry-provider-versions",
        "providers with their versions": "/organizations/acme/registry-providers?include=registry-provider-versions",
        "platform": f"{PROVIDER}/versions/1.0.0/platforms/linux/amd64",
        "platforms": f"{PROVIDER}/versions/1.0.0/platforms",
    }


def _member(env: RunEnv, name: str, **org_access: bool) -> str:
    user = env.container.accounts.create_user(name, f"{name}@example.com")
    secret = env.container.accounts.issue_token(PrincipalKind.USER, user.id).secret
    join(env, secret, name)
    team = _ok(env.api("POST", "/organizations/acme/teams", {"data": {"type": "teams", "attributes": {
        "name": f"team-{name}", "organization-access": org_access}}}))  # fmt: skip
    added = env.api("POST", f"/teams/{team['id']}/relationships/users", {"data": [{"type": "users", "id": name}]})
    assert added.status_code == 204, added.text
    return secret


def _agent(env: RunEnv) -> str:
    pool = _ok(env.api("POST", "/organizations/acme/agent-pools", {"data": {"type": "agent-pools",
               "attributes": {"name": "vpc"}}}))  # fmt: skip
    token = {"data": {"type": "authentication-tokens", "attributes": {"description": "ci"}}}
    secret = str(_ok(env.api("POST", f"/agent-pools/{pool['id']}/authentication-tokens", token))["attributes"]["token"])
    assert env.client.post("/api/agent/register", json={}, headers={"Authorization": f"Bearer {secret}"}).is_success
    return secret


@pytest.fixture(scope="module")
def world() -> tuple[RunEnv, dict[str, str], dict[str, str]]:
    env = make_run_env()
    paths = _pending_everything(env)
    env.create_run(env.upload_config())
    callers = {
        "reader": _member(env, "rita", **{"read-workspaces": True}),
        "run token": str(env.claim()["run_token"]),  # a running plan's: `terraform init` reads the registry
        "agent token": _agent(env),
        "publisher": _member(
            env, "pat", **{"manage-policies": True, "manage-modules": True, "manage-providers": True}
        ),  # fmt: skip
    }
    return env, paths, callers


def _get(env: RunEnv, token: str, path: str) -> Any:
    return env.client.get(f"/api/v2{path}", headers={"Authorization": f"Bearer {token}"})


@pytest.mark.parametrize("caller", ["reader", "run token", "agent token"])
def test_readers_run_tokens_and_agents_read_pending_objects_without_their_upload_links(world: Any, caller: str) -> None:
    env, paths, callers = world
    handed, read = {}, []
    for what, path in paths.items():
        answer = _get(env, callers[caller], path)
        assert answer.status_code in (200, 403, 404), f"{what}: {answer.status_code} {answer.text[:200]}"
        read += [what] if answer.status_code == 200 else []
        if found := capabilities(answer.content):
            handed[what] = found
    assert handed == {}
    expected = {"reader": set(paths), "run token": {w for w in paths if "module" in w or "provider" in w or
                "platform" in w}, "agent token": set()}[caller]  # fmt: skip
    assert set(read) == expected  # each read answered: no link, not no answer


@pytest.mark.parametrize("caller", ["owner", "publisher"])
def test_who_may_publish_reads_the_links(world: Any, caller: str) -> None:
    env, paths, callers = world
    token = env.headers["Authorization"].split()[1] if caller == "owner" else callers[caller]
    for what in ("policy set version", "module version", "provider version", "platform"):
        answer = _get(env, token, paths[what])
        assert answer.status_code == 200 and capabilities(answer.content), f"{what}: {answer.text[:300]}"


# the embedded server: real blob URLs ----------------------------------------------------------------------------
@pytest.fixture
def embedded(tmp_path: Path) -> Iterator[Env]:
    with embedded_env(tmp_path / "data", "remote", url_signing_secret="links-secret") as env:
        yield env


def _embedded_reader(env: Env) -> dict[str, str]:
    """A member of acme in a team that reads every workspace and manages nothing."""
    c = env.container
    team = _ok(env.client.post("/api/v2/organizations/acme/teams", headers=env.auth, json={"data": {"type": "teams",
               "attributes": {"name": "readers", "organization-access": {"read-workspaces": True}}}}))  # fmt: skip
    invite = {"data": {"type": "organization-memberships", "attributes": {"email": "rita@example.com"},
              "relationships": {"teams": {"data": [{"type": "teams", "id": team["id"]}]}}}}  # fmt: skip
    member = _ok(env.client.post("/api/v2/organizations/acme/organization-memberships", headers=env.auth, json=invite))
    user_id = member["relationships"]["user"]["data"]["id"]
    headers = {"Authorization": f"Bearer {c.accounts.issue_token(PrincipalKind.USER, user_id).secret}"}
    accepted = env.client.post(f"/api/v2/organization-memberships/{member['id']}/actions/accept", headers=headers)
    assert accepted.status_code == 200, accepted.text
    return headers


def test_a_reader_cannot_replace_a_pending_policy_set_or_module_version(embedded: Env) -> None:
    """Before, a reader read the pending version's link and PUT his own tarball (a policy that reads the server's
    environment, a backdoored module); the owner's upload then failed with 409. Now the reader's answers hold no
    URL the blob server takes a PUT for, and the owner's upload lands."""
    env = embedded
    reader = _embedded_reader(env)
    api = lambda method, path, body=None: env.client.request(method, f"/api/v2{path}", headers=env.auth, json=body)  # noqa: E731
    ps = _ok(api("POST", "/organizations/acme/policy-sets", {"data": {"type": "policy-sets",
             "attributes": {"name": "guards", "kind": "opa"}}}))  # fmt: skip
    psv = _ok(api("POST", f"/policy-sets/{ps['id']}/versions"))
    _ok(api("POST", "/organizations/acme/registry-modules", {"data": {"type": "registry-modules",
        "attributes": {"name": "vpc", "provider": "aws"}}}))  # fmt: skip
    body = {"data": {"type": "registry-module-versions", "attributes": {"version": "1.0.0"}}}
    module_version = _ok(api("POST", "/registry-modules/acme/vpc/aws/versions", body))
    module_read = "/api/v2/organizations/acme/registry-modules/private/acme/vpc/aws/version?module_version=1.0.0"
    reads = (f"/api/v2/policy-set-versions/{psv['id']}", f"/api/v2/policy-sets/{ps['id']}?include=newest_version",
             module_read)  # fmt: skip
    for path in reads:
        seen = env.client.get(path, headers=reader)
        assert seen.status_code == 200 and capabilities(seen.content) == [], seen.text
    owner_uploads = (
        (psv["links"]["upload"], tarball({"policies.hcl": POLICIES_HCL, "ok.rego": OK_REGO})),
        (module_version["links"]["upload"], tarball({"main.tf": 'variable "cidr" {}\n'})),
    )
    for url, data in owner_uploads:
        put = env.client.put(blob_url_path(url), content=data)
        assert put.status_code == 200, put.text
    assert env.client.get(f"/api/v2/policy-set-versions/{psv['id']}", headers=env.auth).json()["data"]["attributes"][
        "status"] == "ready"  # fmt: skip
    landed = env.client.get(module_read, headers=env.auth).json()["data"]
    assert landed["attributes"]["status"] == "ok" and "upload" not in landed["links"]
