"""Policy sets from a repository (HCP's `vcs-repo` and `policies-path` on policy sets), in-process against the memory
forge: connecting registers the webhook and makes the first version from the tracked branch's head; a push to that
branch touching the policies path makes a new version of the commit (only the path's files, read by the bounded
readers) which becomes current when ingested; a push elsewhere, to another branch or a replayed older one makes
none; a version that does not compile stays errored and the set keeps its current one; the set and its versions show
their source; disconnecting and deleting the set delete the hook."""

from __future__ import annotations

import hashlib
import hmac
import json
from typing import Any

from fastapi.testclient import TestClient
from policy_helpers import create_set
from run_helpers import RunEnv, make_run_env
from terrace.adapters.memory_forge import MemoryForge
from terrace.services.vcs.connections import CONNECTED
from terrace.services.vcs.webhooks import DELIVERY
from terrace.web.app import create_app
from test_policy_set_versions import NO_NULL, POLICIES_HCL
from test_vcs_connections import PAT, github_client, repo
from ui_helpers import sign_in

REPO = "octo/policies"
FEW = 'package terraform.policies.few\nimport rego.v1\ndeny contains "many" if count(input.plan.resource_changes) > 9\n'
FILES = {
    "policies/policies.hcl": POLICIES_HCL.encode(),
    "policies/no_null/main.rego": NO_NULL.encode(),
    "policies/few/few.rego": FEW.encode(),
    "README.md": b"# policies\n",
    **{f"terraform/m{i}.tf": b"# not a policy\n" for i in range(201)},  # more than a policy set version may hold
}


def _setup() -> tuple[RunEnv, MemoryForge, str]:
    env = make_run_env()
    forge = env.container.forge
    assert isinstance(forge, MemoryForge)
    forge.add(REPO, PAT)
    return env, forge, github_client(env)


def _work(env: RunEnv, set_id: str) -> list[Any]:
    """Hands the queued deliveries and connections to their subscribers (the events worker's part): the versions
    made, newest last."""
    events = env.container.publisher.events  # type: ignore[attr-defined]
    before = _newest(env, set_id)
    made = []
    while events:
        event = events.pop(0)
        if event.get("type") in (DELIVERY, CONNECTED):
            env.container.events.handle(event)
            newest = _newest(env, set_id)
            if newest != before:
                made.append({"id": newest, **_version(env, str(newest))})
                before = newest
    return made


def _newest(env: RunEnv, set_id: str) -> str | None:
    found = _set(env, set_id)["relationships"]["newest-version"]["data"]
    return None if found is None else str(found["id"])


def _push(env: RunEnv, forge: MemoryForge, files: dict[str, bytes], delivery: str, ref: str = "main") -> Any:
    before = forge.repositories[REPO].refs.get(ref, "0" * 40)
    after = forge.push(REPO, ref, files, f"change {delivery}")
    return _deliver(env, forge, before, after, delivery, ref)


def _deliver(env: RunEnv, forge: MemoryForge, before: str, after: str, delivery: str, ref: str = "main") -> Any:
    [(url, secret)] = forge.repositories[REPO].hooks.values()
    payload = {"ref": f"refs/heads/{ref}", "before": before, "after": after, "repository": {"full_name": REPO},
               "sender": {"login": "octocat"}, "compare": f"https://forge.test/{REPO}/compare"}  # fmt: skip
    body = json.dumps(payload).encode()
    signature = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    headers = {"X-GitHub-Event": "push", "X-GitHub-Delivery": delivery, "X-Hub-Signature-256": signature}
    answer = env.client.post(url.split("localhost:8443", 1)[1], content=body, headers=headers)
    assert answer.status_code == 202, answer.text
    return after


def _set(env: RunEnv, set_id: str) -> dict[str, Any]:
    return dict(env.api("GET", f"/policy-sets/{set_id}").json()["data"])


def _current(env: RunEnv, set_id: str) -> str | None:
    found = _set(env, set_id)["relationships"]["current-version"]["data"]
    return None if found is None else str(found["id"])


def _version(env: RunEnv, version_id: str) -> dict[str, Any]:
    return dict(env.api("GET", f"/policy-set-versions/{version_id}").json()["data"]["attributes"])


def test_a_push_to_the_tracked_branch_makes_the_set_s_current_version_from_the_policies_path() -> None:
    env, forge, token = _setup()
    first = forge.push(REPO, "main", FILES, "first policies")
    ps = create_set(env, "from-vcs", **{"vcs-repo": repo(token, REPO, branch="main"), "policies-path": "policies"})
    shown = ps["attributes"]["vcs-repo"]
    assert (shown["identifier"], shown["branch"], shown["oauth-token-id"]) == (REPO, "main", token)
    assert shown["webhook-url"].endswith(f"/api/vcs/webhooks/{ps['id']}")
    assert len(forge.repositories[REPO].hooks) == 1
    # the connection's first version: the branch's head, only the policies path's files (201 others left out)
    [version] = _work(env, ps["id"])
    assert version["status"] == "ready", version
    assert _current(env, ps["id"]) == version["id"]
    assert version["source"] == "github" and version["ingress-attributes"]["commit-sha"] == first
    assert version["ingress-attributes"]["branch"] == "main"
    bundle = env.container.policy_set_versions.bundle_of(env.container.policy_sets.load(ps["id"]))
    assert [p.name for p in bundle.policies] == ["no_null", "few"]
    assert sorted(bundle.modules) == ["few/few.rego", "no_null/main.rego"]

    # a push touching the policies path: a new version of that commit, current once ingested
    changed = NO_NULL.replace("is forbidden", "is not allowed")
    sha = _push(env, forge, {**FILES, "policies/no_null/main.rego": changed.encode()}, "d-1")
    [second] = _work(env, ps["id"])
    assert second["status"] == "ready" and _current(env, ps["id"]) == second["id"]
    assert second["ingress-attributes"]["commit-sha"] == sha
    bundle = env.container.policy_set_versions.bundle_of(env.container.policy_sets.load(ps["id"]))
    assert "is not allowed" in bundle.modules["no_null/main.rego"]

    # outside the policies path, another branch, a replay of an older push: nothing new
    _push(env, forge, {**FILES, "policies/no_null/main.rego": changed.encode(), "README.md": b"# x\n"}, "d-2")
    _push(env, forge, {"policies/policies.hcl": b"broken"}, "d-3", ref="feature")
    _deliver(env, forge, first, sha, "d-4")  # sha is no longer main's head
    assert _work(env, ps["id"]) == []
    assert _current(env, ps["id"]) == second["id"]

    # the set's page names its repository, branch and path
    browser = TestClient(create_app(env.container), base_url="https://localhost:8443", follow_redirects=False)
    assert sign_in(browser, env.headers["Authorization"].split()[1]).status_code == 303
    page = browser.get(f"/app/acme/policy-sets/{ps['id']}").text
    assert f'">{REPO}</a> · branch main · policies/</p>' in page

    # a version that does not compile is errored; the set keeps its current one
    _push(env, forge, {**FILES, "policies/few/few.rego": b"package x\ndeny contains if {"}, "d-5")
    [broken] = _work(env, ps["id"])
    assert broken["status"] == "errored" and "compile" in str(broken["error"])
    assert _current(env, ps["id"]) == second["id"]


def test_disconnecting_or_deleting_a_set_deletes_its_webhook_and_bad_input_is_a_422() -> None:
    env, forge, token = _setup()
    forge.push(REPO, "main", FILES, "first")
    ps = create_set(env, "a", **{"vcs-repo": repo(token, REPO), "policies-path": "policies"})
    patch = {"data": {"type": "policy-sets", "attributes": {"vcs-repo": None}}}
    updated = env.api("PATCH", f"/policy-sets/{ps['id']}", patch)
    assert updated.status_code == 200 and updated.json()["data"]["attributes"]["vcs-repo"] is None
    assert forge.repositories[REPO].hooks == {}
    patch["data"]["attributes"]["vcs-repo"] = repo(token, REPO)
    assert env.api("PATCH", f"/policy-sets/{ps['id']}", patch).status_code == 200
    assert len(forge.repositories[REPO].hooks) == 1
    assert env.api("DELETE", f"/policy-sets/{ps['id']}").status_code == 204
    assert forge.repositories[REPO].hooks == {}
    for attrs, pointer in (
        ({"policies-path": "../etc"}, "/data/attributes/policies-path"),
        ({"vcs-repo": repo(token, "octo/missing")}, "/data/attributes/vcs-repo/identifier"),
        ({"vcs-repo": repo("ot-nope1234567890ab", REPO)}, None),
    ):
        body = {"data": {"type": "policy-sets", "attributes": {"name": "b", "kind": "opa", **attrs}}}
        answer = env.api("POST", "/organizations/acme/policy-sets", body)
        assert 400 <= answer.status_code < 500, answer.text
        if pointer:
            assert answer.json()["errors"][0]["source"]["pointer"] == pointer


def test_deleting_the_organization_deletes_the_webhooks_of_its_policy_sets_and_modules() -> None:
    env, forge, token = _setup()
    forge.add("octo/terraform-aws-vpc", PAT)
    create_set(env, "a", **{"vcs-repo": repo(token, REPO)})
    body = {"data": {"type": "registry-modules", "attributes": {"vcs-repo": repo(token, "octo/terraform-aws-vpc")}}}
    module = env.api("POST", "/organizations/acme/registry-modules/vcs", body)
    assert module.status_code == 201, module.text
    assert len(forge.repositories[REPO].hooks) == len(forge.repositories["octo/terraform-aws-vpc"].hooks) == 1
    assert env.api("DELETE", "/organizations/acme").status_code == 204
    assert forge.repositories[REPO].hooks == {} and forge.repositories["octo/terraform-aws-vpc"].hooks == {}
    assert env.container.vcs_store.connection(module.json()["data"]["id"]) is None
