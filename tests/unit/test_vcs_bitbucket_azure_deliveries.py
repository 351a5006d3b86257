"""Deliveries of Bitbucket and Azure DevOps repositories, in-process against the memory forge (the real adapters
and twins are `test_vcs_other_forges.py`'s): a push of several refs is one piece of work per ref (only the tracked
branch runs), a deletion is none; the connection's kind decides the authentication (a GitHub-style
`X-Hub-Signature-256` is none on Bitbucket, nor a SHA-1 `X-Hub-Signature`; Azure DevOps' basic authentication
must carry the hook's secret); Bitbucket Data Center's `diagnostics:ping` is answered; an identifier of another
forge's shape is a 422 naming the field. Payloads are the vendors' documented shapes (`bitbucket_contract.py`,
`azure_contract.py`)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from typing import Any

from azure_contract import payload as azure_payload
from bitbucket_contract import payload as bitbucket_payload
from run_helpers import RunEnv, make_run_env
from terrace.adapters.memory_forge import MemoryForge
from test_vcs_connections import repo
from test_vcs_deliveries import FILES, _runs, _work

TOKEN = "forge-token"
ZERO = "0" * 40


def _client(env: RunEnv, provider: str, api_url: str) -> str:
    attributes = {"service-provider": provider, "http-url": api_url, "api-url": api_url, "oauth-token-string": TOKEN}
    body = {"data": {"type": "oauth-clients", "attributes": attributes}}
    created = env.api("POST", "/organizations/acme/oauth-clients", body)
    assert created.status_code == 201, created.text
    return str(created.json()["data"]["relationships"]["oauth-tokens"]["data"][0]["id"])


def _setup(provider: str, identifier: str, api_url: str) -> tuple[RunEnv, MemoryForge]:
    env = make_run_env()
    forge = env.container.forge
    assert isinstance(forge, MemoryForge)
    forge.add(identifier, TOKEN)
    attributes = {"vcs-repo": repo(_client(env, provider, api_url), identifier), "queue-all-runs": True}
    body = {"data": {"type": "workspaces", "attributes": attributes}}
    updated = env.api("PATCH", f"/workspaces/{env.workspace_id}", body)
    assert updated.status_code == 200, updated.text
    return env, forge


def _secret(forge: MemoryForge, identifier: str) -> str:
    [(_, secret)] = forge.repositories[identifier].hooks.values()
    return secret


def _post(env: RunEnv, body: bytes, headers: dict[str, str]) -> Any:
    return env.client.post(f"/api/vcs/webhooks/{env.workspace_id}", content=body, headers=headers)


def _cloud_change(branch: str, before: str | None, after: str | None) -> dict[str, Any]:
    def ref(sha: str | None) -> dict[str, Any] | None:
        return None if sha is None else {"type": "branch", "name": branch, "target": {"type": "commit", "hash": sha}}

    return {"new": ref(after), "old": ref(before), "links": {}, "created": before is None, "forced": False,
            "closed": after is None, "commits": [], "truncated": False}  # fmt: skip


def _cloud_push(*changes: dict[str, Any]) -> dict[str, Any]:
    actor = {"type": "user", "uuid": "{1}", "display_name": "Octo", "nickname": "octocat", "links": {}}
    repository = {"type": "repository", "uuid": "{2}", "full_name": "octo/infra", "name": "infra", "links": {}}
    return bitbucket_payload("repo:push", {"actor": actor, "repository": repository,
                                           "push": {"changes": list(changes)}})  # fmt: skip


def test_a_bitbucket_push_of_several_refs_is_work_per_ref_and_only_a_signed_delivery_counts() -> None:
    env, forge = _setup("bitbucket_hosted", "octo/infra", "https://api.bitbucket.org/2.0")
    first = forge.push("octo/infra", "main", FILES, "first")
    feature = forge.push("octo/infra", "feature", {**FILES, "main.tf": b"# f\n"})
    main = forge.push("octo/infra", "main", {**FILES, "main.tf": b"# m\n"})
    body = json.dumps(_cloud_push(_cloud_change("feature", None, feature), _cloud_change("main", first, main),
                                  _cloud_change("old", first, None))).encode()  # fmt: skip
    secret = _secret(forge, "octo/infra")
    digest = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    as_github = {"X-Event-Key": "repo:push", "X-Request-UUID": "r-1", "X-Hub-Signature-256": f"sha256={digest}"}
    assert _post(env, body, as_github).status_code == 401  # not Bitbucket's header: no authentication here
    sha1 = hmac.new(secret.encode(), body, hashlib.sha1).hexdigest()
    assert _post(env, body, {**as_github, "X-Hub-Signature": f"sha1={sha1}"}).status_code == 401
    signed = {"X-Event-Key": "repo:push", "X-Request-UUID": "r-1", "X-Hub-Signature": f"sha256={digest}"}
    assert _post(env, body, {**signed, "X-Request-UUID": ""}).status_code == 400  # no delivery id
    assert _post(env, body, signed).json()["meta"]["delivery"] == "queued"
    events = [e for e in env.container.publisher.events if e.get("type") == "vcs.delivery"]  # type: ignore[attr-defined]
    assert [(e["ref"], e["delivery"]) for e in events] == [("refs/heads/feature", "r-1"), ("refs/heads/main", "r-1#1")]
    _work(env)
    [run] = _runs(env)  # the tracked branch only; the deleted branch is no work at all
    cv_id = run["relationships"]["configuration-version"]["data"]["id"]
    cv = env.api("GET", f"/configuration-versions/{cv_id}?include=ingress_attributes").json()
    assert cv["data"]["attributes"]["source"] == "bitbucket" and cv["included"][0]["attributes"]["commit-sha"] == main
    assert forge.repositories["octo/infra"].statuses[0][1].state == "INPROGRESS"


def test_bitbucket_data_center_answers_its_ping_and_checks_the_identifier_s_shape() -> None:
    env, forge = _setup("bitbucket_data_center", "PRJ/infra", "https://bitbucket.example.com")
    body = b'{"test": true}'
    digest = hmac.new(_secret(forge, "PRJ/infra").encode(), body, hashlib.sha256).hexdigest()
    ping = {"X-Event-Key": "diagnostics:ping", "X-Request-Id": "p-1", "X-Hub-Signature": f"sha256={digest}"}
    assert _post(env, body, ping).json()["meta"]["delivery"] == "pong"
    token = env.api("GET", f"/workspaces/{env.workspace_id}").json()["data"]["attributes"]["vcs-repo"]["oauth-token-id"]
    nested = {"data": {"type": "workspaces", "attributes": {"vcs-repo": repo(token, "PRJ/sub/infra")}}}
    refused = env.api("PATCH", f"/workspaces/{env.workspace_id}", nested)
    assert refused.status_code == 422 and "<PROJECT>/<repository>" in refused.text
    assert "vcs-repo/identifier" in refused.text


def test_azure_devops_deliveries_authenticate_with_the_hook_s_secret_and_name_themselves() -> None:
    identifier = "octo/proj/_git/infra"
    env, forge = _setup("ado_services", identifier, "https://dev.azure.com")
    before = forge.push(identifier, "main", FILES, "first")
    after = forge.push(identifier, "main", {**FILES, "main.tf": b"# two\n"})
    repository = {"id": "r", "name": "infra", "url": "u", "remoteUrl": "https://dev.azure.com/octo/proj/_git/infra",
                  "project": {"id": "p", "name": "proj", "url": "u", "state": "wellFormed"}}  # fmt: skip
    resource = {
        "commits": [],
        "pushId": 1,
        "date": "2026-01-01T00:00:00Z",
        "url": "u",
        "refUpdates": [{"name": "refs/heads/main", "oldObjectId": before, "newObjectId": after}],
        "repository": repository,
        "pushedBy": {"id": "i", "displayName": "Octo", "uniqueName": "octo@x"},
    }
    event = azure_payload("git.push", {"subscriptionId": "s", "notificationId": 1, "id": "e-1", "eventType": "git.push",
                                       "publisherId": "tfs", "message": {}, "detailedMessage": {}, "resource": resource,
                                       "resourceVersion": "1.0", "resourceContainers": {},
                                       "createdDate": "2026-01-01T00:00:00Z"})  # fmt: skip
    body = json.dumps(event).encode()

    def basic(password: str) -> dict[str, str]:
        return {"Authorization": "Basic " + base64.b64encode(f"terrace:{password}".encode()).decode()}

    assert _post(env, body, basic("wrong")).status_code == 401
    assert _post(env, body, {}).status_code == 401
    assert _post(env, json.dumps({**event, "id": ""}).encode(), basic(_secret(forge, identifier))).status_code == 400
    assert _post(env, body, basic(_secret(forge, identifier))).status_code == 202
    assert _post(env, body, basic(_secret(forge, identifier))).status_code == 409  # the same event id: a replay
    other = {**event, "id": "e-2", "resource": {**resource, "repository": {**repository, "name": "other"}}}
    assert _post(env, json.dumps(other).encode(), basic(_secret(forge, identifier))).json()["meta"]["delivery"] == (
        "ignored"
    )
    _work(env)
    [run] = _runs(env)
    cv_id = run["relationships"]["configuration-version"]["data"]["id"]
    cv = env.api("GET", f"/configuration-versions/{cv_id}?include=ingress_attributes").json()
    assert cv["data"]["attributes"]["source"] == "ado"
    assert cv["included"][0]["attributes"]["compare-url"].startswith("https://dev.azure.com/octo/proj/_git/infra/")
    wrong = {"data": {"type": "workspaces", "attributes": {"vcs-repo": repo(
        env.api("GET", f"/workspaces/{env.workspace_id}").json()["data"]["attributes"]["vcs-repo"]["oauth-token-id"],
        "octo/infra")}}}  # fmt: skip
    refused = env.api("PATCH", f"/workspaces/{env.workspace_id}", wrong)
    assert refused.status_code == 422 and "_git" in refused.text
