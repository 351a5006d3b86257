"""GitHub App installations (`services/vcs/github_app.py`, `adapters/httpx_github_app.py`), in-process against
the forge twin as a GitHub with an App (`github_app_twin.py`: real git repositories, every request held to GitHub's
OpenAPI document, the App's JWT checked with PyJWT): go-tfe's `GHAInstallations` list and read only the
installations the caller's organizations may use; a workspace connects through an installation (no hook of its own,
an installation token for its one repository); the App's webhook, verified with the App's secret and accepted once,
starts the run of a push and the speculative plan of a pull request, with commit statuses and the plan's comment."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from github_app_twin import APP_ID, GitHubAppTwin
from github_contract import missing
from run_helpers import RunEnv, make_run_env
from terrace.adapters.github_app import Installation
from terrace.adapters.github_forge import GitHubForge
from terrace.domain.destinations import Allowance
from terrace.services.vcs.github_app import GitHubAppInstallations
from test_vcs_deliveries import _runs, _work

PAT = "ghp_notusedbytheapp"
REPO, OTHER = "octo-org/infra", "other-org/secret"
HOOK = "/api/vcs/github-app/webhook"


@pytest.fixture(scope="module")
def twin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[GitHubAppTwin, Path]]:
    if reason := missing():
        pytest.skip(reason)
    with GitHubAppTwin(tmp_path_factory.mktemp("app-twin"), PAT) as app_twin:
        work = app_twin.create(REPO)
        app_twin.commit_and_push(work, {"main.tf": 'output "x" { value = 1 }\n'}, "first")
        app_twin.create(OTHER)
        app_twin.install(11, "octo-org", [REPO])
        app_twin.install(22, "other-org", [OTHER])
        yield app_twin, work
        assert app_twin.problems == []


def _env(app_twin: GitHubAppTwin, grants: str = "acme=octo-org") -> RunEnv:
    return make_run_env(
        forge=GitHubForge(Allowance.parse(["127.0.0.0/8"])),
        github_app_id=APP_ID, github_app_private_key=app_twin.private_pem, github_app_api_url=app_twin.api_url,
        github_app_http_url=app_twin.http_url, github_app_webhook_secret=app_twin.webhook_secret,
        github_app_installations=grants, outbound_allow=("127.0.0.0/8",),
    )  # fmt: skip


def _connect(env: RunEnv, ghain: str, identifier: str = REPO) -> Any:
    repo = {"identifier": identifier, "github-app-installation-id": ghain, "branch": ""}
    body = {"data": {"type": "workspaces", "attributes": {"vcs-repo": repo, "queue-all-runs": True}}}
    return env.api("PATCH", f"/workspaces/{env.workspace_id}", body)


def _deliver(env: RunEnv, app_twin: GitHubAppTwin, event: str, payload: dict[str, Any], **kw: Any) -> Any:
    body, headers = app_twin.app_delivery(event, payload, kw.pop("installation", 11), **kw)
    return env.client.post(HOOK, content=body, headers=headers)


def test_installations_are_listed_and_read_only_for_organizations_that_may_use_them(twin: Any) -> None:
    app_twin, _ = twin
    env = _env(app_twin)
    listed = env.api("GET", "/github-app/installations")
    assert listed.status_code == 200, listed.text
    [shown] = listed.json()["data"]
    assert shown["type"] == "github-app-installations" and shown["id"] == "ghain-11"
    attributes = shown["attributes"]
    assert (attributes["installation-id"], attributes["name"], attributes["installation-type"]) == (
        11, "octo-org", "Organization")  # fmt: skip
    assert attributes["installation-url"].startswith(app_twin.http_url) and attributes["icon-url"]
    read = env.api("GET", "/github-app/installation/ghain-11")
    assert read.status_code == 200 and read.json()["data"]["attributes"]["name"] == "octo-org"
    for other in ("ghain-22", "ghain-99", "not-an-id"):
        assert env.api("GET", f"/github-app/installation/{other}").status_code == 404
    assert app_twin.jwts_seen > 0
    from terrace.domain.principal import PrincipalKind

    stranger = env.container.accounts.create_user("mallory", "mallory@example.com")  # no organization
    bearer = {"Authorization": "Bearer " + env.container.accounts.issue_token(PrincipalKind.USER, stranger.id).secret}
    assert env.client.get("/api/v2/github-app/installations", headers=bearer).json()["data"] == []
    assert env.client.get("/api/v2/github-app/installation/ghain-11", headers=bearer).status_code == 404
    octo, other = (Installation(n, account, "Organization", "", "") for n, account in ((11, "Octo-Org"), (22, "x")))
    every = GitHubAppInstallations(None, "*=*", None)  # type: ignore[arg-type]
    assert every.may_use("acme", octo) and every.may_use("ops", other)
    some = GitHubAppInstallations(None, " acme = octo-org , octocat ; ops=x;broken", None)  # type: ignore[arg-type]
    assert some.may_use("acme", octo) and not some.may_use("acme", other) and not some.may_use("broken", octo)
    assert some.may_use("ops", other) and not some.may_use("ACME", octo)  # organizations by their exact name
    plain = make_run_env()  # no App configured: none
    assert plain.api("GET", "/github-app/installations").json()["data"] == []
    assert plain.api("GET", "/github-app/installation/ghain-11").status_code == 404
    assert plain.client.post(HOOK, content=b"{}").status_code == 404  # nor its webhook


def test_a_workspace_connects_through_an_installation_and_the_app_s_webhook_starts_its_runs(twin: Any) -> None:
    app_twin, work = twin
    env = _env(app_twin)
    assert _connect(env, "ghain-22", OTHER).status_code == 404  # another account's installation
    refused = _connect(env, "ghain-11", OTHER)  # a repository the installation does not reach
    assert refused.status_code == 422 and "cannot be connected" in refused.text
    connected = _connect(env, "ghain-11")
    assert connected.status_code == 200, connected.text
    shown = connected.json()["data"]["attributes"]["vcs-repo"]
    assert shown["github-app-installation-id"] == "ghain-11" and shown["oauth-token-id"] is None
    assert shown["repository-http-url"].endswith(REPO) and app_twin.repos[REPO].hooks == {}  # no hook of its own
    org = {"data": {"type": "organizations", "attributes": {"speculative-plan-comments-enabled": True}}}
    assert env.api("PATCH", "/organizations/acme", org).status_code == 200

    before, after = app_twin.commit_and_push(work, {"main.tf": 'output "x" { value = 2 }\n'}, "second")
    payload = app_twin.push_payload(REPO, "refs/heads/main", before, after)
    forged = _deliver(env, app_twin, "push", payload, secret="not-the-app-secret", delivery="d-0")
    assert forged.status_code == 401
    assert env.client.post(f"/api/vcs/webhooks/{env.workspace_id}", content=b"{}").status_code == 404
    other = _deliver(env, app_twin, "push", payload, installation=22)  # another installation: names no workspace
    assert other.status_code == 202 and other.json()["meta"]["delivery"] == "ignored"
    assert _deliver(env, app_twin, "push", payload, delivery="d-1").json()["meta"]["delivery"] == "queued"
    assert _deliver(env, app_twin, "push", payload, delivery="d-1").status_code == 409  # a replay
    _work(env)
    [run] = _runs(env)
    assert run["attributes"]["message"].strip() == "second"
    statuses = app_twin.repos[REPO].statuses
    assert statuses and statuses[0] == (after, statuses[0][1]) and statuses[0][1]["state"] == "pending"
    assert statuses[0][1]["context"] == "Terrace/acme/app"
    scoped = {names for _, names, _ in app_twin.tokens.values()}
    assert (REPO,) in scoped  # the workspace's token reaches its one repository only

    from git_forge import git

    git("checkout", "--quiet", "-B", "feature", cwd=work)
    head = app_twin.commit_and_push(work, {"main.tf": 'output "x" { value = 3 }\n'}, "feature", "feature")[1]
    git("checkout", "--quiet", "main", cwd=work)
    pr = app_twin.pull_request_payload(REPO, 5, head, "feature")
    assert _deliver(env, app_twin, "pull_request", pr, delivery="d-2").status_code == 202
    _work(env)
    speculative = [r for r in _runs(env) if r["attributes"]["plan-only"]]
    assert len(speculative) == 1
    env.work_next()  # the push's plan (first in the queue)
    _work(env)
    for _ in range(3):  # work until the pull request's plan finished
        if app_twin.repos[REPO].comments:
            break
        env.work_next()
        _work(env)
    [(_, (number, text))] = app_twin.repos[REPO].comments.items()
    assert number == 5 and "Terrace/acme/app" in text and "1 to add" in text
    assert (head, "success") in [(sha, body["state"]) for sha, body in app_twin.repos[REPO].statuses]
    assert app_twin.problems == []


def test_the_workspace_connect_form_offers_the_installations_the_organization_may_use(twin: Any) -> None:
    from test_web_ui import csrf_of
    from test_web_ui_version_control import PAGE, _browser

    app_twin, _ = twin
    env = _env(app_twin)
    client = _browser(env)
    page = client.get(PAGE)
    assert page.status_code == 200 and 'value="ghain-11"' in page.text and "GitHub App · octo-org" in page.text
    assert 'value="ghain-22"' not in page.text  # another account's: not this organization's to use
    form = {"oauth_token_id": "ghain-11", "identifier": REPO, "branch": "", "working_directory": "",
            "trigger_patterns": "", "tags_regex": "", "csrf_token": csrf_of(page.text)}  # fmt: skip
    assert client.post(PAGE, data=form).status_code == 303
    shown = env.api("GET", f"/workspaces/{env.workspace_id}").json()["data"]["attributes"]["vcs-repo"]
    assert shown["github-app-installation-id"] == "ghain-11" and shown["identifier"] == REPO
    assert 'value="ghain-11" selected' in client.get(PAGE).text
    partial = {"data": {"type": "workspaces", "attributes": {"vcs-repo": {"tags-regex": "^v"}}}}  # as HCP's updates
    updated = env.api("PATCH", f"/workspaces/{env.workspace_id}", partial)
    assert updated.status_code == 200, updated.text
    kept = updated.json()["data"]["attributes"]["vcs-repo"]
    assert (kept["github-app-installation-id"], kept["identifier"], kept["tags-regex"]) == ("ghain-11", REPO, "^v")


def test_the_app_s_jwt_and_installation_tokens_are_reused_until_shortly_before_they_expire(twin: Any) -> None:
    from terrace.adapters.httpx_github_app import HttpxGitHubApp

    app_twin, _ = twin
    app = HttpxGitHubApp(APP_ID, app_twin.private_pem, app_twin.api_url, app_twin.http_url, "terrace",
                         Allowance.parse(["127.0.0.0/8"]))  # fmt: skip
    asked, signed = len([c for c in app_twin.calls if c.endswith("/access_tokens")]), len(app_twin.jwt_log)
    first = app.token(11, REPO)
    assert app.token(11, REPO) == first and app.repositories(11) == [REPO]
    assert len([c for c in app_twin.calls if c.endswith("/access_tokens")]) == asked + 2  # REPO's, then all's
    app_twin.token_lifetime_s = 240  # a token within five minutes of its expiry is asked again
    try:
        short = app.token(22, OTHER)
        assert app.token(22, OTHER) != short
    finally:
        app_twin.token_lifetime_s = 3600
    assert len([c for c in app_twin.calls if c.endswith("/access_tokens")]) == asked + 4
    assert app.installation(11).account == "octo-org" and app_twin.problems == []
    assert len(app_twin.jwt_log) - signed == 5  # five calls as the App, one JWT (signed once, reused for minutes)
    assert len(set(app_twin.jwt_log[signed:])) == 1
