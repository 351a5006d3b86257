"""Aggregated commit statuses (`aggregated-commit-status-enabled`, go-tfe's TestOrganizationsUpdate), in process
against the memory forge: the setting reads back as set; while it is off each workspace's run reports as
`Terrace/<org>/<workspace>`; on, a commit two workspaces run on gets one status, `Terrace/<org>`, the worst of
theirs, counting them."""

from __future__ import annotations

import hashlib
import hmac
import json
from urllib.parse import urlsplit

from run_helpers import RunEnv
from terrace.adapters.memory_forge import MemoryForge
from terrace.services.vcs.aggregated_statuses import aggregate
from test_vcs_connections import repo
from test_vcs_deliveries import FILES, REPO, _push, _setup, _work


def _deliver_to_each(env: RunEnv, forge: MemoryForge, payload: dict[str, object], delivery: str) -> None:
    body = json.dumps(payload).encode()
    for url, secret in forge.repositories[REPO].hooks.values():
        signature = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
        headers = {"X-GitHub-Event": "push", "X-GitHub-Delivery": f"{delivery}-{url[-8:]}",
                   "X-Hub-Signature-256": signature}  # fmt: skip
        answer = env.client.post(urlsplit(url).path, content=body, headers=headers)
        assert answer.status_code == 202, answer.text


def test_the_setting_reads_back_and_one_status_counts_every_workspace_of_the_commit() -> None:
    env, forge, token = _setup()
    second = {"data": {"type": "workspaces", "attributes": {"name": "web", "vcs-repo": repo(token),
                                                            "queue-all-runs": True}}}  # fmt: skip
    assert env.api("POST", "/organizations/acme/workspaces", second).status_code == 201
    forge.push(REPO, "main", FILES, "first")

    _deliver_to_each(env, forge, _push(forge, {**FILES, "main.tf": b"# one\n"}), "d-1")
    _work(env)
    contexts = {status.context for _, status in forge.repositories[REPO].statuses}
    assert contexts == {"Terrace/acme/app", "Terrace/acme/web"}

    body = {"data": {"type": "organizations", "attributes": {"aggregated-commit-status-enabled": True}}}
    updated = env.api("PATCH", "/organizations/acme", body)
    assert updated.status_code == 200 and updated.json()["data"]["attributes"]["aggregated-commit-status-enabled"]
    assert env.api("GET", "/organizations/acme").json()["data"]["attributes"]["aggregated-commit-status-enabled"]
    forge.repositories[REPO].statuses.clear()
    _deliver_to_each(env, forge, _push(forge, {**FILES, "main.tf": b"# two\n"}), "d-2")
    _work(env)
    sha = forge.repositories[REPO].refs["main"]
    sent = [status for commit, status in forge.repositories[REPO].statuses if commit == sha]
    assert sent and {status.context for status in sent} == {"Terrace/acme"}
    assert sent[-1].state == "pending" and sent[-1].description == "Terrace: 2 workspaces: 2 pending"
    assert sent[-1].target_url.endswith("/app/acme/workspaces")


def test_the_worst_state_is_shown_and_each_is_counted() -> None:
    assert aggregate({"ws-a": "success", "ws-b": "failure", "ws-c": "running"}) == (
        "failure",
        "Terrace: 3 workspaces: 1 failed, 1 running, 1 succeeded",
    )
    assert aggregate({"ws-a": "success"}) == ("success", "Terrace: 1 workspace: 1 succeeded")
