"""Registry modules published from a repository (HCP's `POST /organizations/:org/registry-modules/vcs`), in-process
against the memory forge: the name and provider come from `terraform-<provider>-<name>`; a tag-based module's tag
pushes `vX.Y.Z`/`X.Y.Z` publish versions from the tag's files (a moved tag's stale delivery and other tags publish
nothing); a branch-based module publishes its branch's head as its `initial-version` and then the commits named by
`POST .../versions` with a `commit-sha` (no upload link); the module and its versions show their source; deleting
the module deletes its webhook; bad input is a 4xx."""

from __future__ import annotations

import hashlib
import hmac
import json
from typing import Any

from fastapi.testclient import TestClient
from run_helpers import RunEnv, make_run_env
from terrace.adapters.memory_forge import MemoryForge
from terrace.services.vcs.connections import CONNECTED
from terrace.services.vcs.webhooks import DELIVERY
from terrace.web.app import create_app
from test_vcs_connections import PAT, github_client
from ui_helpers import sign_in

TAGGED, BRANCHED = "octo/terraform-aws-vpc", "octo/terraform-aws-net"
FILES = {"main.tf": b'variable "cidr" {\n  type = string\n}\noutput "cidr" { value = var.cidr }\n',
         "README.md": b"# vpc\n"}  # fmt: skip
BASE = "/organizations/acme/registry-modules"


def _setup() -> tuple[RunEnv, MemoryForge, str]:
    env = make_run_env()
    forge = env.container.forge
    assert isinstance(forge, MemoryForge)
    forge.add(TAGGED, PAT)
    forge.add(BRANCHED, PAT)
    return env, forge, github_client(env)


def _work(env: RunEnv) -> None:
    events = env.container.publisher.events  # type: ignore[attr-defined]
    while events:
        event = events.pop(0)
        if event.get("type") in (DELIVERY, CONNECTED):
            env.container.events.handle(event)


def _tag(env: RunEnv, forge: MemoryForge, repo: str, tag: str, delivery: str, sha: str | None = None) -> str:
    after = sha or forge.push(repo, tag, {**FILES, "version.txt": tag.encode()}, f"release {tag}")
    [(url, secret)] = forge.repositories[repo].hooks.values()
    payload = {"ref": f"refs/tags/{tag}", "before": "0" * 40, "after": after, "repository": {"full_name": repo},
               "sender": {"login": "octocat"}, "compare": ""}  # fmt: skip
    body = json.dumps(payload).encode()
    signature = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    headers = {"X-GitHub-Event": "push", "X-GitHub-Delivery": delivery, "X-Hub-Signature-256": signature}
    answer = env.client.post(url.split("localhost:8443", 1)[1], content=body, headers=headers)
    assert answer.status_code == 202, answer.text
    return after


def _create(env: RunEnv, **vcs_repo: Any) -> Any:
    body = {"data": {"type": "registry-modules", "attributes": {"vcs-repo": vcs_repo}}}
    initial = vcs_repo.pop("initial_version", None)
    if initial:
        body["data"]["attributes"]["initial-version"] = initial
    return env.api("POST", f"{BASE}/vcs", body)


def _statuses(env: RunEnv, name: str) -> dict[str, str]:
    module = env.api("GET", f"{BASE}/private/acme/{name}/aws").json()["data"]["attributes"]
    return {v["version"]: v["status"] for v in module["version-statuses"]}


def test_tags_of_a_tag_based_module_s_repository_publish_its_versions() -> None:
    env, forge, token = _setup()
    forge.push(TAGGED, "main", FILES, "first")
    created = _create(env, identifier=TAGGED, **{"oauth-token-id": token, "display-identifier": TAGGED})
    assert created.status_code == 201, created.text
    attributes = created.json()["data"]["attributes"]
    assert (attributes["name"], attributes["provider"], attributes["namespace"]) == ("vpc", "aws", "acme")
    assert attributes["publishing-mechanism"] == "git_tag" and attributes["vcs-repo"]["identifier"] == TAGGED
    assert len(forge.repositories[TAGGED].hooks) == 1
    _work(env)
    assert _statuses(env, "vpc") == {}  # a tag-based module's versions are its tags'

    sha = _tag(env, forge, TAGGED, "v1.0.0", "d-1")
    _tag(env, forge, TAGGED, "1.1.0", "d-2")
    _tag(env, forge, TAGGED, "release-candidate", "d-3")
    _tag(env, forge, TAGGED, "v2.0.0", "d-4")
    forge.push(TAGGED, "v2.0.0", {**FILES, "moved.txt": b"x"}, "the tag moved")
    _work(env)
    assert _statuses(env, "vpc") == {"1.0.0": "ok", "1.1.0": "ok"}  # v2.0.0's delivery names its old SHA
    versions = env.container.module_versions.of_module(created.json()["data"]["id"])
    assert {(v.version, v.source, v.commit_sha) for v in versions if v.version == "1.0.0"} == {("1.0.0", "github", sha)}
    # the module's page names its repository, linked, and offers no upload form
    browser = TestClient(create_app(env.container), base_url="https://localhost:8443", follow_redirects=False)
    assert sign_in(browser, env.headers["Authorization"].split()[1]).status_code == 303
    page = browser.get("/app/acme/registry/vpc/aws").text
    assert f'<a href="https://forge.test/{TAGGED}" rel="noopener noreferrer">{TAGGED}</a> · tags vX.Y.Z' in page
    assert 'id="publish"' not in page
    # a tag-based module's versions are its tags: no upload through the API
    body = {"data": {"type": "registry-module-versions", "attributes": {"version": "3.0.0"}}}
    assert env.api("POST", f"{BASE}/private/acme/vpc/aws/versions", body).status_code == 422
    assert env.api("DELETE", f"{BASE}/private/acme/vpc/aws").status_code == 204
    assert forge.repositories[TAGGED].hooks == {}


def test_a_branch_based_module_publishes_its_initial_version_and_commits_named_through_the_api() -> None:
    env, forge, token = _setup()
    head = forge.push(BRANCHED, "main", FILES, "first")
    created = _create(env, identifier=BRANCHED, branch="main", initial_version="0.1.0", **{"oauth-token-id": token})
    assert created.status_code == 201, created.text
    assert created.json()["data"]["attributes"]["publishing-mechanism"] == "branch"
    _work(env)
    assert _statuses(env, "net") == {"0.1.0": "ok"}
    later = forge.push(BRANCHED, "main", {**FILES, "extra.tf": b'output "e" { value = 1 }\n'}, "second")
    body = {"data": {"type": "registry-module-versions", "attributes": {"version": "0.2.0", "commit-sha": later}}}
    answer = env.api("POST", f"{BASE}/private/acme/net/aws/versions", body)
    assert answer.status_code == 201, answer.text
    doc = answer.json()["data"]
    assert doc["attributes"]["status"] == "ok" and doc["attributes"]["commit-sha"] == later
    assert "upload" not in doc.get("links", {})
    versions = env.container.module_versions.of_module(created.json()["data"]["id"])
    assert {v.version: v.commit_sha for v in versions} == {"0.1.0": head, "0.2.0": later}
    # a tag push publishes nothing on a branch-based module
    _tag(env, forge, BRANCHED, "v9.0.0", "d-9")
    _work(env)
    assert set(_statuses(env, "net")) == {"0.1.0", "0.2.0"}
    for attrs, status in (({"version": "0.3.0"}, 422), ({"version": "0.3.0", "commit-sha": "f" * 40}, 422),
                          ({"version": "0.2.0", "commit-sha": later}, 409)):  # fmt: skip
        body = {"data": {"type": "registry-module-versions", "attributes": attrs}}
        assert env.api("POST", f"{BASE}/private/acme/net/aws/versions", body).status_code == status, attrs


def test_a_repository_not_named_terraform_provider_name_or_a_foreign_token_is_refused() -> None:
    env, forge, token = _setup()
    forge.add("octo/vpc", PAT)
    answer = _create(env, identifier="octo/vpc", **{"oauth-token-id": token})
    assert answer.status_code == 422
    assert answer.json()["errors"][0]["source"]["pointer"] == "/data/attributes/vcs-repo/identifier"
    assert _create(env, identifier=TAGGED, **{"oauth-token-id": "ot-nope1234567890ab"}).status_code == 404
    assert env.api("POST", f"{BASE}/vcs", {"data": {"type": "registry-modules", "attributes": {}}}).status_code == 422
    assert forge.repositories[TAGGED].hooks == {} and forge.repositories["octo/vpc"].hooks == {}
