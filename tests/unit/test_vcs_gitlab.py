"""GitLab repositories, in-process against the memory forge: a workspace connects to a project (nested groups too)
through a `gitlab_hosted` OAuth client; deliveries are authenticated by `X-Gitlab-Token` (the connection's kind
decides: a GitHub signature is no authentication here) and accepted once by `X-Gitlab-Event-UUID` or
`Idempotency-Key`; a push, a tag push and a merge request (opened, reopened, or updated with new commits) start the
same runs as GitHub's, with `source: gitlab` and commit statuses in GitLab's states. Payloads are GitLab's documented
shapes (`gitlab_contract.py`)."""

from __future__ import annotations

import hashlib
import hmac
import json
from typing import Any

from gitlab_contract import EVENT_HEADERS, STATES, payload
from run_helpers import RunEnv, make_run_env
from terrace.adapters.memory_forge import MemoryForge
from terrace.domain import runs as rs
from test_vcs_connections import repo
from test_vcs_deliveries import FILES, _runs, _work

PROJECT, TOKEN = "platform/team/infra", "glpat-unittoken"


def gitlab_client(env: RunEnv) -> str:
    body = {"data": {"type": "oauth-clients", "attributes": {
        "service-provider": "gitlab_hosted", "http-url": "https://gitlab.com", "api-url": "https://gitlab.com/api/v4",
        "oauth-token-string": TOKEN}}}  # fmt: skip
    created = env.api("POST", "/organizations/acme/oauth-clients", body)
    assert created.status_code == 201, created.text
    return str(created.json()["data"]["relationships"]["oauth-tokens"]["data"][0]["id"])


def _setup(**attributes: Any) -> tuple[RunEnv, MemoryForge]:
    env = make_run_env()
    forge = env.container.forge
    assert isinstance(forge, MemoryForge)
    forge.add(PROJECT, TOKEN)
    body = {"data": {"type": "workspaces", "attributes": {
        "vcs-repo": repo(gitlab_client(env), PROJECT), "queue-all-runs": True, **attributes}}}  # fmt: skip
    updated = env.api("PATCH", f"/workspaces/{env.workspace_id}", body)
    assert updated.status_code == 200, updated.text
    assert updated.json()["data"]["attributes"]["vcs-repo"]["service-provider"] == "gitlab_hosted"
    return env, forge


def _deliver(env: RunEnv, forge: MemoryForge, body: dict[str, Any], delivery: str, **headers: str) -> Any:
    [(_, token)] = forge.repositories[PROJECT].hooks.values()
    sent = {"X-Gitlab-Event": EVENT_HEADERS[body["object_kind"]], "X-Gitlab-Token": token,
            "X-Gitlab-Event-UUID": delivery, **headers}  # fmt: skip
    return env.client.post(f"/api/vcs/webhooks/{env.workspace_id}", content=json.dumps(body).encode(), headers=sent)


def _project(name: str = PROJECT, project_id: int = 100) -> dict[str, Any]:
    return {"id": project_id, "name": name.rpartition("/")[2], "namespace": name.rpartition("/")[0],
            "web_url": f"https://gitlab.com/{name}", "git_http_url": f"https://gitlab.com/{name}.git",
            "path_with_namespace": name, "default_branch": "main", "visibility_level": 0}  # fmt: skip


def _commit(sha: str) -> dict[str, Any]:
    return {"id": sha, "message": "change", "title": "change", "timestamp": "2026-01-01T00:00:00+00:00",
            "url": f"https://gitlab.com/{PROJECT}/-/commit/{sha}",
            "author": {"name": "Octo", "email": "o@x"}}  # fmt: skip


def _push(forge: MemoryForge, files: dict[str, bytes], message: str = "change", ref: str = "main") -> dict[str, Any]:
    before = forge.repositories[PROJECT].refs.get(ref, "0" * 40)
    after = forge.push(PROJECT, ref, files, message)
    kind = "tag_push" if ref.startswith("v") else "push"
    full = f"refs/tags/{ref}" if kind == "tag_push" else f"refs/heads/{ref}"
    return payload(kind, {
        "object_kind": kind, "event_name": kind, "before": before, "after": after, "ref": full,
        "ref_protected": True, "checkout_sha": after, "user_id": 4, "user_name": "Octo", "user_username": "octocat",
        "user_email": "", "user_avatar": None, "project_id": 100, "project": _project(), "commits": [_commit(after)],
        "total_commits_count": 1, "repository": {"name": "infra"},
    })  # fmt: skip


def _merge_request(sha: str, iid: int = 7, action: str = "open", **attrs: Any) -> dict[str, Any]:
    source = attrs.pop("source", _project())
    return payload("merge_request", {
        "object_kind": "merge_request", "event_type": "merge_request",
        "user": {"id": 4, "name": "Octo", "username": "octocat", "avatar_url": None}, "project": _project(),
        "labels": [], "changes": {}, "repository": {"name": "infra"},
        "object_attributes": {
            "id": 9000 + iid, "iid": iid, "target_branch": "main", "source_branch": "feature",
            "source_project_id": source["id"], "target_project_id": 100, "title": "a change", "state": "opened",
            "action": action, "url": f"https://gitlab.com/{PROJECT}/-/merge_requests/{iid}", "author_id": 4,
            "source": source, "target": _project(), "last_commit": _commit(sha), **attrs},
    })  # fmt: skip


def _states(forge: MemoryForge) -> list[tuple[str, str]]:
    return [(sha, s.state) for sha, s in forge.repositories[PROJECT].statuses]


def test_a_push_makes_a_gitlab_version_and_its_run_shows_gitlab_s_states() -> None:
    env, forge = _setup(**{"auto-apply": True})
    forge.push(PROJECT, "main", FILES, "first")
    pushed = _push(forge, {**FILES, "main.tf": b"# changed\n"})
    answer = _deliver(env, forge, pushed, "e-1")
    assert answer.status_code == 202 and answer.json()["meta"]["delivery"] == "queued"
    _work(env)
    [run] = _runs(env)
    cv_id = run["relationships"]["configuration-version"]["data"]["id"]
    cv = env.api("GET", f"/configuration-versions/{cv_id}?include=ingress_attributes").json()
    assert cv["data"]["attributes"]["source"] == "gitlab"
    ingress = cv["included"][0]["attributes"]
    sha = forge.repositories[PROJECT].refs["main"]
    assert ingress["commit-sha"] == sha and ingress["branch"] == "main" and ingress["identifier"] == PROJECT
    assert ingress["sender-username"] == "octocat"
    assert ingress["compare-url"] == f"https://gitlab.com/{PROJECT}/-/compare/{pushed['before']}...{sha}"
    env.work_next()  # the plan
    _work(env)
    env.work_next(status="errored")  # the apply fails: GitLab's `failed`
    _work(env)
    states = _states(forge)
    assert states[0] == (sha, "running") and states[-1] == (sha, "failed")  # GitHub would show "pending"
    assert {s for _, s in states} <= set(STATES)
    assert forge.repositories[PROJECT].statuses[0][1].context == "Terrace/acme/app"


def test_the_token_is_the_authentication_and_an_event_is_accepted_once() -> None:
    env, forge = _setup()
    forge.push(PROJECT, "main", FILES)
    body = _push(forge, {**FILES, "main.tf": b"# changed\n"})
    assert _deliver(env, forge, body, "e-1", **{"X-Gitlab-Token": "not-the-secret"}).status_code == 401
    [(_, secret)] = forge.repositories[PROJECT].hooks.values()
    raw = json.dumps(body).encode()
    signature = "sha256=" + hmac.new(secret.encode(), raw, hashlib.sha256).hexdigest()
    as_github = {"X-GitHub-Event": "push", "X-GitHub-Delivery": "e-2", "X-Hub-Signature-256": signature}
    assert env.client.post(f"/api/vcs/webhooks/{env.workspace_id}", content=raw, headers=as_github).status_code == 401
    no_id = {"X-Gitlab-Event": "Push Hook", "X-Gitlab-Token": secret}
    assert env.client.post(f"/api/vcs/webhooks/{env.workspace_id}", content=raw, headers=no_id).status_code == 400
    assert _deliver(env, forge, body, "e-3").status_code == 202
    assert _deliver(env, forge, body, "e-3").status_code == 409  # a replay of the same event
    keyed = {"X-Gitlab-Event-UUID": "", "Idempotency-Key": "k-1"}
    assert _deliver(env, forge, body, "", **keyed).status_code == 202
    assert _deliver(env, forge, body, "", **keyed).status_code == 409
    other = {**body, "project": _project("evil/infra")}
    assert _deliver(env, forge, other, "e-4").json()["meta"]["delivery"] == "ignored"
    _work(env)
    assert len(_runs(env)) == 2  # e-3 and k-1: two events (GitLab's retry of one repeats both headers)


def test_a_merge_request_gets_a_speculative_plan_and_new_commits_cancel_the_older() -> None:
    env, forge = _setup()
    forge.push(PROJECT, "main", FILES)
    first = forge.push(PROJECT, "feature", {**FILES, "main.tf": b"# one\n"})
    forge.repositories[PROJECT].pulls[7] = ["main.tf"]
    assert _deliver(env, forge, _merge_request(first), "e-1").status_code == 202
    _work(env)
    [plan] = _runs(env)
    assert plan["attributes"]["plan-only"] is True
    second = forge.push(PROJECT, "feature", {**FILES, "main.tf": b"# two\n"})
    edited = _merge_request(second, action="update")  # no oldrev: a title edit, no new commit
    assert _deliver(env, forge, edited, "e-2").json()["meta"]["delivery"] == "ignored"
    assert _deliver(env, forge, _merge_request(second, action="update", oldrev=first), "e-3").status_code == 202
    _work(env)
    runs = {r["id"]: r for r in _runs(env)}
    assert len(runs) == 2 and runs[plan["id"]]["attributes"]["status"] == rs.CANCELED
    newer = next(r for r in runs.values() if r["id"] != plan["id"])
    cv_id = newer["relationships"]["configuration-version"]["data"]["id"]
    ingress = env.api("GET", f"/configuration-versions/{cv_id}/ingress-attributes").json()["data"]["attributes"]
    assert ingress["pull-request-number"] == 7 and ingress["pull-request-url"].endswith("/-/merge_requests/7")
    assert ingress["is-pull-request"] is True and ingress["branch"] == "feature"
    assert (first, "running") in _states(forge) and (first, "canceled") in _states(forge)
    env.work_next()
    _work(env)
    assert (second, "success") in _states(forge)


def test_a_fork_s_merge_request_gets_no_plan_and_a_matching_tag_runs() -> None:
    env, forge = _setup(**{"file-triggers-enabled": False})
    forge.push(PROJECT, "main", FILES)
    head = forge.push(PROJECT, "feature", {**FILES, "main.tf": b"# fork\n"})
    fork = _merge_request(head, iid=9, source=_project("mallory/infra", 666))
    assert _deliver(env, forge, fork, "e-1").status_code == 202
    _work(env)
    assert _runs(env) == []
    tags = {"data": {"type": "workspaces", "attributes": {"vcs-repo": repo(
        env.api("GET", f"/workspaces/{env.workspace_id}").json()["data"]["attributes"]["vcs-repo"]["oauth-token-id"],
        PROJECT, **{"tags-regex": r"^v\d+\.\d+\.\d+$"})}}}  # fmt: skip
    assert env.api("PATCH", f"/workspaces/{env.workspace_id}", tags).status_code == 200
    assert _deliver(env, forge, _push(forge, FILES, ref="v1.2.3"), "e-2").status_code == 202
    _work(env)
    [run] = _runs(env)
    cv_id = run["relationships"]["configuration-version"]["data"]["id"]
    ingress = env.api("GET", f"/configuration-versions/{cv_id}/ingress-attributes").json()["data"]["attributes"]
    assert ingress["tag"] == "v1.2.3"


def test_a_nested_identifier_is_a_gitlab_one_only() -> None:
    env, forge = _setup()
    from test_vcs_connections import PAT, github_client

    body = {"data": {"type": "workspaces", "attributes": {"vcs-repo": repo(github_client(env), PROJECT)}}}
    refused = env.api("PATCH", f"/workspaces/{env.workspace_id}", body)
    assert refused.status_code == 422 and "vcs-repo/identifier" in refused.text
    assert PAT and len(forge.repositories[PROJECT].hooks) == 1  # the GitLab connection stays
