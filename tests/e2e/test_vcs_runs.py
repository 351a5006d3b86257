"""VCS-driven runs end to end: a workspace connected through the API to a repository of the forge twin (real git
repositories, every REST call Terrace makes and every payload the twin sends checked against GitHub's published
descriptions), remote runs on the embedded stack's runners (terraform 1.0.3 pinned, as the other remote-run tests).

A push to the tracked branch is applied, its commit's status going pending -> success; a pull request gets a
speculative plan and a status pending -> success; a push outside the working directory starts nothing; a forged or
replayed delivery is refused; a fork's pull request gets no plan until the organization allows it, and then no
sensitive variable."""

from __future__ import annotations

import shutil
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from e2e_runs import RUN_TIMEOUT_S, remote_workspace, runs, wait_final, wait_for
from forge_twin import ForgeTwin
from git_forge import git
from github_contract import missing

pytestmark = pytest.mark.e2e

TOKEN = "ghp_e2e_personal_access_token"
REPO = "octo/platform"
CONFIG = """
variable "token" {
  default = "none"
}

resource "null_resource" "a" {}

output "has_token" {
  value = var.token != "none"
}
"""


def _seen(name: str) -> str:
    """An output a plan shows as new: whether the run got the workspace's sensitive variable."""
    return f'\noutput "{name}_has_token" {{\n  value = var.token != "none"\n}}\n'


@dataclass
class Vcs:
    twin: ForgeTwin
    work: Path
    workspace_id: str
    api: Any


@pytest.fixture(scope="module")
def vcs(run_stack: Any, run_api: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Vcs]:
    if reason := missing():
        pytest.skip(reason)
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    with ForgeTwin(tmp_path_factory.mktemp("forge"), TOKEN, ca_bundle=run_stack.ca_bundle) as twin:
        work = twin.create(REPO)
        twin.commit_and_push(work, {"infra/main.tf": CONFIG, "README.md": "platform\n"}, "first")
        client = {"data": {"type": "oauth-clients", "attributes": {
            "service-provider": "github_enterprise", "http-url": twin.http_url, "api-url": twin.api_url,
            "oauth-token-string": TOKEN}}}  # fmt: skip
        created = run_api.request("POST", f"/api/v2/organizations/{run_stack.organization}/oauth-clients", client, 201)
        token_id = created.json()["data"]["relationships"]["oauth-tokens"]["data"][0]["id"]
        ws_id = remote_workspace(run_api, f"vcs-{uuid.uuid4().hex[:8]}", **{"auto-apply": True, "queue-all-runs": True,
            "working-directory": "infra", "vcs-repo": {"identifier": REPO, "oauth-token-id": token_id}})  # fmt: skip
        secret = {"data": {"type": "vars", "attributes": {"key": "token", "value": "s3cr3t-vcs-value",
                  "category": "terraform", "sensitive": True}}}  # fmt: skip
        run_api.request("POST", f"/api/v2/workspaces/{ws_id}/vars", secret, 201)
        yield Vcs(twin, work, ws_id, run_api)
        run_api.request("DELETE", f"/api/v2/workspaces/{ws_id}", expect=204)
        assert twin.repos[REPO].hooks == {}  # deleting the workspace deleted its hook
        assert twin.problems == []


def _statuses(vcs: Vcs, sha: str) -> list[str]:
    return [body["state"] for got, body in vcs.twin.repos[REPO].statuses if got == sha]


def _new_run(vcs: Vcs, known: set[str]) -> dict[str, Any]:
    found: dict[str, Any] = wait_for(
        lambda: next((r for r in runs(vcs.api, vcs.workspace_id) if r["id"] not in known), None),
        RUN_TIMEOUT_S, what="the delivery's run")  # fmt: skip
    return found


def _no_new_run(vcs: Vcs, known: set[str]) -> None:
    time.sleep(1)  # the decision was made (the caller saw its forge call); a run would be written by now
    assert {r["id"] for r in runs(vcs.api, vcs.workspace_id)} == known


def _plan_log(vcs: Vcs, run: dict[str, Any]) -> str:
    plan_id = run["relationships"]["plan"]["data"]["id"]
    url = vcs.api.request("GET", f"/api/v2/plans/{plan_id}").json()["data"]["attributes"]["log-read-url"]
    return str(vcs.api.http.get(url).text)


def test_a_push_to_the_tracked_branch_is_applied_and_its_commit_shows_it(vcs: Vcs) -> None:
    known = {r["id"] for r in runs(vcs.api, vcs.workspace_id)}
    before, after = vcs.twin.commit_and_push(vcs.work, {"infra/main.tf": CONFIG + "# two\n"}, "change infra")
    answers = vcs.twin.deliver(REPO, "push", vcs.twin.push_payload(REPO, "refs/heads/main", before, after))
    assert [a.status_code for a in answers] == [202]
    run = wait_final(vcs.api, _new_run(vcs, known)["id"], RUN_TIMEOUT_S)
    assert run["attributes"]["status"] == "applied", run["attributes"]
    cv_id = run["relationships"]["configuration-version"]["data"]["id"]
    ingress = vcs.api.request("GET", f"/api/v2/configuration-versions/{cv_id}/ingress-attributes").json()["data"]
    assert ingress["attributes"]["commit-sha"] == after and ingress["attributes"]["branch"] == "main"
    wait_for(lambda: _statuses(vcs, after)[-1:] == ["success"], 30, what="the success status")
    assert _statuses(vcs, after)[0] == "pending"


def test_a_pull_request_gets_a_speculative_plan_and_a_status(vcs: Vcs) -> None:
    known = {r["id"] for r in runs(vcs.api, vcs.workspace_id)}
    git("checkout", "--quiet", "-b", "feature", cwd=vcs.work)
    _, head = vcs.twin.commit_and_push(vcs.work, {"infra/main.tf": CONFIG + _seen("pr")}, "a pull request", "feature")
    git("checkout", "--quiet", "main", cwd=vcs.work)
    answers = vcs.twin.deliver(REPO, "pull_request", vcs.twin.pull_request_payload(REPO, 1, head, "feature"))
    assert [a.status_code for a in answers] == [202]
    run = wait_final(vcs.api, _new_run(vcs, known)["id"], RUN_TIMEOUT_S)
    assert run["attributes"]["status"] == "planned_and_finished" and run["attributes"]["plan-only"] is True
    log = _plan_log(vcs, run)  # the repository's own pull request: the workspace's sensitive variable reaches it
    assert "pr_has_token" in log and "true" in log.split("pr_has_token", 1)[1][:80], log[-2000:]
    assert "s3cr3t-vcs-value" not in log
    wait_for(lambda: _statuses(vcs, head)[-1:] == ["success"], 30, what="the success status")
    assert _statuses(vcs, head)[0] == "pending"


def test_pushes_outside_the_working_directory_and_forged_or_replayed_deliveries_start_nothing(vcs: Vcs) -> None:
    known = {r["id"] for r in runs(vcs.api, vcs.workspace_id)}
    before, after = vcs.twin.commit_and_push(vcs.work, {"README.md": "docs only\n"}, "docs")
    payload = vcs.twin.push_payload(REPO, "refs/heads/main", before, after)
    forged = vcs.twin.deliver(REPO, "push", payload, secret="not-the-hook-secret")
    assert [a.status_code for a in forged] == [401]
    delivery = str(uuid.uuid4())
    assert [a.status_code for a in vcs.twin.deliver(REPO, "push", payload, delivery)] == [202]
    assert [a.status_code for a in vcs.twin.deliver(REPO, "push", payload, delivery)] == [409]
    # the events worker read the changed files (the decision): a moment later, still no run
    wait_for(lambda: f"GET /repos/{REPO}/compare/{before}...{after}" in vcs.twin.calls, 30, what="the compare call")
    _no_new_run(vcs, known)


def test_a_fork_s_pull_request_gets_no_plan_until_allowed_and_then_no_secret(vcs: Vcs, run_stack: Any) -> None:
    known = {r["id"] for r in runs(vcs.api, vcs.workspace_id)}
    git("checkout", "--quiet", "-b", "fork-change", cwd=vcs.work)
    _, head = vcs.twin.commit_and_push(
        vcs.work, {"infra/main.tf": CONFIG + _seen("fork")}, "from a fork", "fork-change"
    )
    git("checkout", "--quiet", "main", cwd=vcs.work)
    fork = vcs.twin.pull_request_payload(REPO, 2, head, "fork-change", head_repo="mallory/platform")
    reads = vcs.twin.calls.count(f"GET /repos/{REPO}")
    assert [a.status_code for a in vcs.twin.deliver(REPO, "pull_request", fork)] == [202]
    # the events worker read the tracked branch (then decided): a moment later, still no run
    wait_for(lambda: vcs.twin.calls.count(f"GET /repos/{REPO}") > reads, 30, what="the delivery's handling")
    _no_new_run(vcs, known)
    allow = {"data": {"type": "organizations", "attributes": {"fork-pull-request-plans-enabled": True}}}
    try:
        vcs.api.request("PATCH", f"/api/v2/organizations/{run_stack.organization}", allow)
        again = vcs.twin.pull_request_payload(REPO, 2, head, "fork-change", "reopened", head_repo="mallory/platform")
        assert [a.status_code for a in vcs.twin.deliver(REPO, "pull_request", again)] == [202]
        run = wait_final(vcs.api, _new_run(vcs, known)["id"], RUN_TIMEOUT_S)
        assert run["attributes"]["status"] == "planned_and_finished", run["attributes"]
        log = _plan_log(vcs, run)
        assert "fork_has_token" in log and "false" in log.split("fork_has_token", 1)[1][:80], log[-2000:]
        assert "s3cr3t-vcs-value" not in log
    finally:
        allow["data"]["attributes"]["fork-pull-request-plans-enabled"] = False
        vcs.api.request("PATCH", f"/api/v2/organizations/{run_stack.organization}", allow)
