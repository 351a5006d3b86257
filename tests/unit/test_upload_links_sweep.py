"""A capability goes only to a caller who may use it: every GET route of the app (API, http backend, runner API, UI,
admin API), walked over an organization holding one of everything (`test_gets_never_write`'s) and a pending object
of every kind that has an upload link — a policy set version, a module version, a provider version and platform, a
state version, a configuration version — answers a read-only member, the run token of a running job and an agent
token without an upload capability (`upload_capabilities.py`: a field named like an upload, a PUT URL by its shape,
or any URL `presign_put` minted for the request).

The route list is the app's own: a new GET route is walked without being named here. The owner walks the same
routes first and must find the links (the seeding reaches the pending objects), so the sweep cannot pass by reaching
nothing."""

from __future__ import annotations

from typing import Any

import pytest
from run_helpers import RunEnv, join, make_run_env
from terrace.domain.principal import PrincipalKind
from terrace.web.ui.session import COOKIE
from test_gets_never_write import _basic, _gets, _ok, _seed, _url
from upload_capabilities import capabilities, minting

MODULE = "app"  # the routes' `{name}` after an organization is the workspace's name (`_value`): the module's too
VERSION = "1.0.0"
# routes whose object is chosen by a query parameter, or whose links come with an `include`
QUERIES = {
    "/version": f"module_version={VERSION}",
    "/policy-sets": "include=current_version,newest_version",
    "/policy-sets/{set_id}": "include=current_version,newest_version",
    "/registry-providers": "include=registry-provider-versions",
    "/registry-providers/{registry}/{namespace}/{name}": "include=registry-provider-versions",
}
# what the owner, who may publish everything, must be handed on these reads (the sweep reaches the pending objects)
OWNER_SEES = (
    "/api/v2/policy-set-versions/{version_id}",
    "/api/v2/organizations/{org}/registry-modules/private/{namespace}/{name}/{provider}/version",
    "/api/v2/organizations/{org}/registry-providers/{registry}/{namespace}/{name}/versions/{version}",
    "/api/v2/organizations/{org}/registry-providers/{registry}/{namespace}/{name}/versions/{version}/platforms",
)


def _pending(env: RunEnv, ids: dict[str, str]) -> list[str]:
    """A pending object of every kind with an upload link; the ids the routes' parameters take. Returns the extra
    URLs to walk (objects no path parameter names: the pending state version and its workspace's list)."""
    api, org = env.api, env.organization
    policy_set = {"data": {"type": "policy-sets", "attributes": {"name": "guards", "kind": "opa"}}}
    ids["set_id"] = _ok(api("POST", f"/organizations/{org}/policy-sets", policy_set), 201)["data"]["id"]
    version = _ok(api("POST", f"/policy-sets/{ids['set_id']}/versions"), 201)["data"]
    assert version["links"].get("upload"), version  # the creator's answer has it
    ids["version_id"] = version["id"]
    # the module `_seed` made (with a test run, whose configuration's upload link went to its creator only)
    ids["module_id"] = _ok(api("GET", f"/organizations/{org}/registry-modules/private/{org}/{MODULE}/aws"))["data"][
        "id"
    ]
    body = {"data": {"type": "registry-module-versions", "attributes": {"version": VERSION}}}
    assert _ok(api("POST", f"/registry-modules/{org}/{MODULE}/aws/versions", body), 201)["data"]["links"]["upload"]
    provider = {"data": {"type": "registry-providers", "attributes": {"name": MODULE, "namespace": org,
                "registry-name": "private"}}}  # fmt: skip
    _ok(api("POST", f"/organizations/{org}/registry-providers", provider), 201)
    versions = f"/organizations/{org}/registry-providers/private/{org}/{MODULE}/versions"
    attrs = {"version": VERSION, "key-id": "ABCDEF0123456789", "protocols": ["5.0"]}
    made = _ok(api("POST", versions, {"data": {"type": "registry-provider-versions", "attributes": attrs}}), 201)
    assert made["data"]["links"]["shasums-upload"] and made["data"]["links"]["shasums-sig-upload"]
    attrs = {"os": "linux", "arch": "amd64", "shasum": "0" * 64, "filename": f"terraform-provider-app_{VERSION}.zip"}
    platform = {"data": {"type": "registry-provider-platforms", "attributes": attrs}}
    assert _ok(api("POST", f"{versions}/{VERSION}/platforms", platform), 201)["data"]["links"]["provider-binary-upload"]
    ids.update(namespace=org, registry="private", provider="aws", version=VERSION, os="linux", arch="amd64")
    # a pending state version (in a workspace of its own: the seeded run holds `app`)
    workspace = {"data": {"type": "workspaces", "attributes": {"name": "states", "execution-mode": "local"}}}
    states = _ok(api("POST", f"/organizations/{org}/workspaces", workspace), 201)["data"]["id"]
    _ok(api("POST", f"/workspaces/{states}/actions/lock", {"reason": "upload"}))
    sv = {"data": {"type": "state-versions", "attributes": {"serial": 2, "md5": "0" * 32,
          "lineage": "4f1f6e2a-0000-4000-8000-000000000001"}}}  # fmt: skip
    created = _ok(api("POST", f"/workspaces/{states}/state-versions", sv), 201)["data"]
    assert created["attributes"]["status"] == "pending" and created["attributes"]["hosted-state-upload-url"]
    # and a pending configuration version in the same workspace
    cv = {"data": {"type": "configuration-versions", "attributes": {"auto-queue-runs": False}}}
    pending_cv = _ok(api("POST", f"/workspaces/{states}/configuration-versions", cv), 201)["data"]
    return [
        f"/api/v2/state-versions/{created['id']}",
        f"/api/v2/workspaces/{states}/state-versions",
        f"/api/v2/configuration-versions/{pending_cv['id']}",
        f"/api/v2/workspaces/{states}/configuration-versions",
    ]


def _running_job_token(env: RunEnv) -> str:
    """The run token of a plan that is running now (claimed, not finished), in a workspace of its own."""
    workspace = {"data": {"type": "workspaces", "attributes": {"name": "jobs", "execution-mode": "remote"}}}
    ws_id = _ok(env.api("POST", f"/organizations/{env.organization}/workspaces", workspace), 201)["data"]["id"]
    env.create_run(env.upload_config(workspace_id=ws_id), workspace_id=ws_id)
    spec = env.claim("r-sweep")
    return str(spec["run_token"])


def _agent_token(env: RunEnv) -> str:
    pool = {"data": {"type": "agent-pools", "attributes": {"name": "sweep"}}}
    pool_id = _ok(env.api("POST", f"/organizations/{env.organization}/agent-pools", pool), 201)["data"]["id"]
    token = {"data": {"type": "authentication-tokens", "attributes": {"description": "sweep"}}}
    made = _ok(env.api("POST", f"/agent-pools/{pool_id}/authentication-tokens", token), 201)
    secret = str(made["data"]["attributes"]["token"])
    registered = env.client.post("/api/agent/register", headers={"Authorization": f"Bearer {secret}"}, json={})
    assert registered.status_code == 200, registered.text
    return secret


def _reader(env: RunEnv) -> str:
    """A member whose team reads every workspace (runs, state, variables) and manages nothing."""
    user = env.container.accounts.create_user("rita", "rita@example.com")
    secret = env.container.accounts.issue_token(PrincipalKind.USER, user.id).secret
    join(env, secret, "rita")
    team = {"data": {"type": "teams", "attributes": {"name": "readers",
            "organization-access": {"read-workspaces": True, "read-projects": True}}}}  # fmt: skip
    team_id = _ok(env.api("POST", f"/organizations/{env.organization}/teams", team), 201)["data"]["id"]
    added = env.api("POST", f"/teams/{team_id}/relationships/users", {"data": [{"type": "users", "id": "rita"}]})
    assert added.status_code == 204, added.text
    return secret


@pytest.fixture(scope="module")
def world() -> tuple[RunEnv, dict[str, str], list[str], dict[str, str]]:
    env = make_run_env()
    ids = _seed(env)
    extra = _pending(env, ids)
    owner = env.headers["Authorization"].split()[1]
    callers = {"owner": owner, "reader": _reader(env), "run token": _running_job_token(env)}
    callers["agent token"] = _agent_token(env)
    return env, ids, extra, callers


def _urls(env: RunEnv, ids: dict[str, str], extra: list[str]) -> list[tuple[str, str]]:
    """(route, URL) of every GET route, with the query its objects need, and the extra URLs."""
    found = []
    for path in _gets(env.client.app):
        url = _url(path, ids)
        query = next((q for suffix, q in QUERIES.items() if path.endswith(suffix)), None)
        found.append((path, f"{url}?{query}" if query else url))
    return found + [(url, url) for url in extra]


def _walk(
    world: tuple[RunEnv, dict[str, str], list[str], dict[str, str]], caller: str, monkeypatch: pytest.MonkeyPatch
) -> tuple[dict[str, list[str]], int]:
    """Every GET route as `caller` (its bearer token; a web session for the UI when it is a user): what each answer
    hands over, by route, and how many answered 200."""
    env, ids, extra, callers = world
    token = callers[caller]
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/vnd.api+json"}
    cookies = {}
    if caller in ("owner", "reader"):
        cookies[COOKIE] = env.container.web_sessions.sign_in(token)[0]
    handed: dict[str, list[str]] = {}
    answered = 0
    with minting(env.container.blobs, monkeypatch) as minted:
        for path, url in _urls(env, ids, extra):
            minted.clear()
            sent = dict(headers)
            if path.startswith("/state/v1"):
                sent["Authorization"] = _basic(headers)
            env.client.cookies.clear()
            for name, value in cookies.items():
                env.client.cookies.set(name, value)
            response = env.client.get(url, headers=sent, follow_redirects=False)
            assert response.status_code < 500, f"GET {url} as {caller}: {response.status_code} {response.text[:300]}"
            answered += response.status_code == 200
            found = capabilities(response.content, minted)
            location = response.headers.get("location", "")
            found += capabilities(location, minted) if location else []
            if found:
                handed[path] = found
    env.client.cookies.clear()
    return handed, answered


def test_the_owner_is_handed_the_links_the_sweep_looks_for(world: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    handed, answered = _walk(world, "owner", monkeypatch)
    assert answered >= 110, answered
    missing = [route for route in OWNER_SEES if route not in handed]
    assert missing == [], f"the seeding no longer reaches: {missing}; handed: {sorted(handed)}"


@pytest.mark.parametrize("caller", ["reader", "run token", "agent token"])
def test_no_read_hands_an_upload_capability_to_who_may_not_write(
    world: Any, caller: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    handed, answered = _walk(world, caller, monkeypatch)
    assert handed == {}
    if caller == "reader":
        assert answered >= 100, answered  # the reader's walk reached the organization's objects
    if caller == "run token":
        assert answered >= 3, answered  # its workspace, its organization, the registry's modules and providers


def test_the_detector_knows_each_stores_put_urls_and_not_their_get_urls(tmp_path: Any) -> None:
    """The sweep's signs, checked on what each blob store mints: the memory and embedded stores' PUT URLs by their
    shape, S3's (whose method is inside the signature) by having been minted for the request."""
    import boto3
    from botocore.config import Config
    from terrace.adapters.fs_blob_urls import UrlSigner
    from terrace.adapters.fs_blobs import FsBlobs
    from terrace.adapters.memory_blobs import MemoryBlobs
    from terrace.adapters.s3_blobs import S3Blobs

    client = boto3.client("s3", region_name="eu-west-1", aws_access_key_id="x", aws_secret_access_key="y",
                          config=Config(signature_version="s3v4"))  # fmt: skip
    stores = [MemoryBlobs(), FsBlobs(tmp_path, UrlSigner("secret", "https://terrace.test"), 1024), S3Blobs(client, "b")]
    for store in stores:
        put, get = (
            store.presign_put("module-uploads/m/v.tar.gz", 60),
            store.presign_get("module-uploads/m/v.tar.gz", 60),
        )
        document = '{"data": {"links": {"self": "%s"}}}'
        assert capabilities(document % put, [put]), put
        assert capabilities(document % get, [put]) == [], get  # a download link is no upload capability
        if not isinstance(store, S3Blobs):
            assert capabilities(document % put), put  # by its shape alone
            assert capabilities(f"<a href='{put.replace('&', '&amp;')}'>") != [], put  # in a page too
    named = (
        '{"data": {"attributes": {"upload-url": "https://x/y", "shasums-uploaded": true, "can-upload-asset": true}}}'
    )
    assert capabilities(named) == ["/data/attributes/upload-url=https://x/y"]
    assert (
        capabilities('{"data": {"attributes": {"upload-url": null, "status-timestamps": {"uploaded-at": "2026"}}}}')
        == []
    )
