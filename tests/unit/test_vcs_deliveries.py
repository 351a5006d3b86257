"""Webhook deliveries, in-process against the memory forge: the HMAC is the authentication and a delivery id is
accepted once; a push to the tracked branch makes a configuration version of the confirmed commit (its files below
the repository's root, `source: github`, ingress attributes) whose run auto-applies; `[ci skip]`, other branches and
pushes outside the trigger paths start nothing; a pull request gets a speculative plan with commit statuses, a
fork's none unless the organization allows it and then without sensitive variables; a newer push to a pull request
cancels its older plan."""

from __future__ import annotations

import hashlib
import hmac
import io
import json
import tarfile
from typing import Any

from run_helpers import RunEnv, make_run_env
from terrace.adapters.memory_forge import MemoryForge
from terrace.domain import runs as rs
from terrace.services.vcs.webhooks import DELIVERY
from test_vcs_connections import PAT, github_client, repo

REPO = "octo/infra"
FILES = {"main.tf": b'output "x" { value = 1 }\n', "env/prod/main.tf": b'output "y" { value = 2 }\n'}


def _setup(**ws_attributes: Any) -> tuple[RunEnv, MemoryForge, str]:
    env = make_run_env()
    forge = env.container.forge
    assert isinstance(forge, MemoryForge)
    forge.add(REPO, PAT)
    token = github_client(env)
    attributes = {"vcs-repo": repo(token), "queue-all-runs": True, **ws_attributes}
    body = {"data": {"type": "workspaces", "attributes": attributes}}
    updated = env.api("PATCH", f"/workspaces/{env.workspace_id}", body)
    assert updated.status_code == 200, updated.text
    return env, forge, token


def _deliver(env: RunEnv, forge: MemoryForge, event: str, payload: dict[str, Any], delivery: str, **kw: Any) -> Any:
    [(_, secret)] = forge.repositories[REPO].hooks.values()
    body = json.dumps(payload).encode()
    signature = kw.get("signature") or "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    headers = {"X-GitHub-Event": event, "X-GitHub-Delivery": delivery, "X-Hub-Signature-256": signature}
    return env.client.post(f"/api/vcs/webhooks/{env.workspace_id}", content=body, headers=headers)


def _work(env: RunEnv) -> list[Any]:
    """Hands the queued `vcs.delivery` and run events to their subscribers (the events worker's part)."""
    events = env.container.publisher.events  # type: ignore[attr-defined]
    handled = []
    while events:
        event = events.pop(0)
        if event.get("type") in (DELIVERY, "run.status_changed"):
            handled.append(env.container.events.handle(event))
    return handled


def _push(forge: MemoryForge, files: dict[str, bytes], message: str = "change", ref: str = "main") -> dict[str, Any]:
    before = forge.repositories[REPO].refs.get(ref, "0" * 40)
    after = forge.push(REPO, ref, files, message)
    return {"ref": f"refs/heads/{ref}", "before": before, "after": after, "repository": {"full_name": REPO},
            "sender": {"login": "octocat"}, "compare": f"https://forge.test/{REPO}/compare"}  # fmt: skip


def _pr(forge: MemoryForge, sha: str, number: int = 7, head_repo: str = REPO, action: str = "opened") -> dict[str, Any]:
    return {"action": action, "number": number, "repository": {"full_name": REPO}, "sender": {"login": "octocat"},
            "pull_request": {"number": number, "html_url": f"https://forge.test/{REPO}/pull/{number}", "title": "t",
                             "head": {"sha": sha, "ref": "feature", "repo": {"full_name": head_repo}},
                             "base": {"ref": "main", "repo": {"full_name": REPO}}}}  # fmt: skip


def _runs(env: RunEnv) -> list[dict[str, Any]]:
    return list(env.api("GET", f"/workspaces/{env.workspace_id}/runs").json()["data"])


def test_a_push_to_the_tracked_branch_makes_a_version_of_the_confirmed_commit_and_its_run() -> None:
    env, forge, _ = _setup(**{"auto-apply": True})
    forge.push(REPO, "main", FILES, "first")
    answer = _deliver(env, forge, "push", _push(forge, {**FILES, "main.tf": b"# changed\n"}), "d-1")
    assert answer.status_code == 202 and answer.json()["meta"]["delivery"] == "queued"
    _work(env)
    [run] = _runs(env)
    assert run["attributes"]["auto-apply"] is True and run["attributes"]["plan-only"] is False
    assert run["attributes"]["message"] == "change"  # the commit's message, confirmed by the forge's API
    cv_id = run["relationships"]["configuration-version"]["data"]["id"]
    cv = env.api("GET", f"/configuration-versions/{cv_id}?include=ingress_attributes").json()
    assert cv["data"]["attributes"]["source"] == "github"
    ingress = cv["included"][0]["attributes"]
    assert ingress["commit-sha"] == forge.repositories[REPO].refs["main"] and ingress["branch"] == "main"
    assert ingress["sender-username"] == "octocat" and ingress["identifier"] == REPO
    archive = env.blobs.get(f"config/{env.workspace_id}/{cv_id}.tar.gz")
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        assert sorted(m.name for m in tar.getmembers() if m.isfile()) == ["env/prod/main.tf", "main.tf"]
    statuses = forge.repositories[REPO].statuses
    assert statuses and statuses[0][1].state == "pending" and statuses[0][1].context == "Terrace/acme/app"
    assert statuses[0][1].target_url.endswith(f"/app/acme/workspaces/app/runs/{run['id']}")
    assert "POST /repos/octo/infra/statuses/" + ingress["commit-sha"] in forge.calls
    spec = env.work_next()  # the run sees its commit as HCP's runs do (TFC_CONFIGURATION_VERSION_GIT_*)
    assert (spec["git_branch"], spec["git_commit_sha"]) == ("main", ingress["commit-sha"])


def test_forged_replayed_and_foreign_deliveries_are_refused_or_ignored() -> None:
    env, forge, _ = _setup()
    forge.push(REPO, "main", FILES)
    payload = _push(forge, {**FILES, "main.tf": b"# changed\n"})
    forged = _deliver(env, forge, "push", payload, "d-1", signature="sha256=" + "0" * 64)
    assert forged.status_code == 401 and forged.json()["errors"]
    unsigned = env.client.post(
        f"/api/vcs/webhooks/{env.workspace_id}", content=b"{}", headers={"X-GitHub-Event": "push"}
    )
    assert unsigned.status_code == 401
    assert _deliver(env, forge, "push", payload, "d-1").status_code == 202
    replayed = _deliver(env, forge, "push", payload, "d-1")
    assert replayed.status_code == 409
    assert _deliver(env, forge, "ping", {"zen": "hi"}, "d-2").status_code == 200
    other = {**payload, "repository": {"full_name": "evil/repo"}}
    assert _deliver(env, forge, "push", other, "d-3").json()["meta"]["delivery"] == "ignored"
    assert env.client.post("/api/vcs/webhooks/ws-unknown", content=b"{}").status_code == 404
    bad_json = env.client.post(f"/api/vcs/webhooks/{env.workspace_id}", content=b"{", headers={
        "X-GitHub-Event": "push", "X-GitHub-Delivery": "d-4", "X-Hub-Signature-256": "sha256=" + hmac.new(
            forge.repositories[REPO].hooks["1"][1].encode(), b"{", hashlib.sha256).hexdigest()})  # fmt: skip
    assert bad_json.status_code == 422
    _work(env)
    assert len(_runs(env)) == 1
    newer = _push(forge, {**FILES, "main.tf": b"# newer\n"})  # delivered late: the older push is not re-run
    assert _deliver(env, forge, "push", payload, "d-5").status_code == 202  # the old push, a new delivery id
    _work(env)
    assert len(_runs(env)) == 1
    assert _deliver(env, forge, "push", newer, "d-6").status_code == 202
    _work(env)
    assert len(_runs(env)) == 2


def test_ci_skip_other_branches_and_pushes_outside_the_trigger_paths_start_nothing() -> None:
    env, forge, _ = _setup(**{"working-directory": "env/prod"})
    files = dict(FILES)
    forge.push(REPO, "main", files)

    def change(name: str, message: str = "change") -> dict[str, Any]:
        files[name] = files.get(name, b"") + b"# more\n"
        return _push(forge, dict(files), message)

    _deliver(env, forge, "push", change("env/prod/main.tf", message="fix [ci skip]"), "d-1")
    feature = _push(forge, {**files, "env/prod/main.tf": b"# on a feature branch\n"}, ref="feature")
    _deliver(env, forge, "push", feature, "d-2")
    _deliver(env, forge, "push", change("README.md"), "d-3")
    _work(env)
    assert _runs(env) == []
    _deliver(env, forge, "push", change("env/prod/main.tf"), "d-4")
    _work(env)
    assert len(_runs(env)) == 1
    patterns = {"data": {"type": "workspaces", "attributes": {"trigger-patterns": ["/modules/**/*.tf"]}}}
    assert env.api("PATCH", f"/workspaces/{env.workspace_id}", patterns).status_code == 200
    _deliver(env, forge, "push", change("env/prod/main.tf"), "d-5")
    _deliver(env, forge, "push", change("modules/net/vpc/main.tf"), "d-6")
    _work(env)
    assert len(_runs(env)) == 2


def test_a_pull_request_gets_a_speculative_plan_and_statuses_and_a_newer_push_cancels_the_older() -> None:
    env, forge, _ = _setup()
    forge.push(REPO, "main", FILES)
    first = forge.push(REPO, "feature", {**FILES, "main.tf": b"# one\n"})
    forge.repositories[REPO].pulls[7] = ["main.tf"]
    assert _deliver(env, forge, "pull_request", _pr(forge, first), "d-1").status_code == 202
    _work(env)
    [plan] = _runs(env)
    assert plan["attributes"]["plan-only"] is True
    second = forge.push(REPO, "feature", {**FILES, "main.tf": b"# two\n"})
    _deliver(env, forge, "pull_request", _pr(forge, second, action="synchronize"), "d-2")
    _work(env)
    runs = {r["id"]: r for r in _runs(env)}
    assert len(runs) == 2 and runs[plan["id"]]["attributes"]["status"] == rs.CANCELED
    states = [(sha, s.state) for sha, s in forge.repositories[REPO].statuses]
    assert (first, "pending") in states and (first, "error") in states and (second, "pending") in states
    env.work_next()  # the newer plan finishes: its commit shows success
    _work(env)
    assert (second, "success") in [(sha, s.state) for sha, s in forge.repositories[REPO].statuses]


def test_a_fork_s_pull_request_gets_no_plan_unless_allowed_and_then_no_secret() -> None:
    env, forge, _ = _setup()
    forge.push(REPO, "main", FILES)
    head = forge.push(REPO, "feature", {**FILES, "main.tf": b"# fork\n"})
    forge.repositories[REPO].pulls[9] = ["main.tf"]
    secret = {"data": {"type": "vars", "attributes": {"key": "token", "value": "s3cr3t-value", "sensitive": True,
              "category": "env"}}}  # fmt: skip
    assert env.api("POST", f"/workspaces/{env.workspace_id}/vars", secret).status_code == 201
    _deliver(env, forge, "pull_request", _pr(forge, head, 9, head_repo="mallory/infra"), "d-1")
    _work(env)
    assert _runs(env) == []
    allow = {"data": {"type": "organizations", "attributes": {"fork-pull-request-plans-enabled": True}}}
    assert env.api("PATCH", "/organizations/acme", allow).status_code == 200
    _deliver(env, forge, "pull_request", _pr(forge, head, 9, head_repo="mallory/infra", action="reopened"), "d-2")
    _work(env)
    assert len(_runs(env)) == 1
    spec = env.work_next()
    assert "s3cr3t-value" not in json.dumps(spec) and "token" not in [v.get("key") for v in spec.get("variables", [])]


def test_with_queue_all_runs_off_the_first_pushes_wait_for_a_run_queued_by_hand() -> None:
    env, forge, _ = _setup(**{"queue-all-runs": False})
    forge.push(REPO, "main", FILES)
    _deliver(env, forge, "push", _push(forge, {**FILES, "main.tf": b"# one\n"}), "d-1")
    _work(env)
    assert _runs(env) == []
    current = env.api("GET", f"/workspaces/{env.workspace_id}/configuration-versions").json()["data"]
    assert len(current) == 1 and current[0]["attributes"]["source"] == "github"  # kept: a run by hand uses it
    env.create_run(current[0]["id"])
    _deliver(env, forge, "push", _push(forge, {**FILES, "main.tf": b"# two\n"}), "d-2")
    _work(env)
    assert len(_runs(env)) == 2


def test_gitea_and_forgejo_deliveries_are_read_alike() -> None:
    """Gitea and Forgejo sign with a bare hex digest in their own headers and name the event and delivery there."""
    env, forge, _ = _setup()
    forge.push(REPO, "main", FILES)
    [(_, secret)] = forge.repositories[REPO].hooks.values()
    for prefix in ("Gitea", "Forgejo"):
        body = json.dumps(_push(forge, {**FILES, "main.tf": prefix.encode()})).encode()
        digest = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
        headers = {f"X-{prefix}-Event": "push", f"X-{prefix}-Delivery": prefix, f"X-{prefix}-Signature": digest}
        answer = env.client.post(f"/api/vcs/webhooks/{env.workspace_id}", content=body, headers=headers)
        assert answer.status_code == 202, answer.text
        wrong = {**headers, f"X-{prefix}-Delivery": "other", f"X-{prefix}-Signature": "0" * 64}
        assert env.client.post(f"/api/vcs/webhooks/{env.workspace_id}", content=body, headers=wrong).status_code == 401
        _work(env)
    assert len(_runs(env)) == 2


def test_the_run_list_and_page_show_the_commit_and_pull_request_with_links_to_the_forge() -> None:
    from fastapi.testclient import TestClient
    from terrace.web.app import create_app
    from ui_helpers import sign_in

    env, forge, _ = _setup()
    forge.push(REPO, "main", FILES)
    head = forge.push(REPO, "feature", {**FILES, "main.tf": b"# ui\n"})
    forge.repositories[REPO].pulls[7] = ["main.tf"]
    payload = _pr(forge, head)
    payload["pull_request"]["html_url"] = "javascript:alert(1)"  # a forge's link is shown only when http(s)
    _deliver(env, forge, "pull_request", payload, "d-1")
    _work(env)
    [run] = _runs(env)
    ui = TestClient(create_app(env.container), base_url="https://testserver", follow_redirects=False)
    assert sign_in(ui, env.headers["Authorization"].removeprefix("Bearer ")).status_code == 303
    for page in ("/app/acme/workspaces/app/runs", f"/app/acme/workspaces/app/runs/{run['id']}"):
        html = ui.get(page).text
        assert f'<a href="https://forge.test/{REPO}/commit/{head}" rel="noopener noreferrer"><code>{head[:7]}' in html
        assert "pull request #7" in html and "by octocat" in html and "javascript:" not in html


def test_the_events_queue_s_second_delivery_of_the_work_queues_no_second_run() -> None:
    env, forge, _ = _setup()
    forge.push(REPO, "main", FILES)
    assert _deliver(env, forge, "push", _push(forge, {**FILES, "main.tf": b"# once\n"}), "d-1").status_code == 202
    [event] = [e for e in env.container.publisher.events if e.get("type") == DELIVERY]  # type: ignore[attr-defined]
    first = env.container.vcs_ingress.handle(dict(event))
    again = env.container.vcs_ingress.handle(dict(event))  # the queue delivers at least once
    assert first is not None and again is not None and again.id == first.id
    assert len(_runs(env)) == 1
