"""Bitbucket Cloud, Bitbucket Data Center and Azure DevOps Services repositories, in-process: the app and its
services in memory, the forge port the real adapters (`bitbucket_forge.py`, `bitbucket_server_forge.py`,
`azure_devops_forge.py`) over HTTP to the twins (`bitbucket_twin.py`, `azure_twin.py`: real git repositories, every
REST call checked against the vendor's published description, every payload against its documented events), the
twins' deliveries posted to the app. Each provider: connecting a workspace registers its webhook (a subscription per
event on Azure DevOps) and disconnecting deletes it; a push is a configuration version of the confirmed commit
(`source` `bitbucket`/`ado`) whose run reports on the commit (Bitbucket's INPROGRESS -> SUCCESSFUL, Azure DevOps'
pending -> succeeded); a pull request is a speculative plan with its status, a fork's is none; a forged or replayed
delivery is refused; a push outside the trigger patterns starts nothing. Azure DevOps' pull request also gets the
status on the pull request itself."""

from __future__ import annotations

import io
import tarfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from azure_twin import AzureDevOpsTwin
from bitbucket_server_twin import BitbucketServerTwin
from bitbucket_twin import BitbucketCloudTwin
from forge_twin import ForgeTwin
from git_forge import git
from run_helpers import RunEnv, make_run_env
from terrace.adapters.azure_devops_forge import AzureDevOpsForge
from terrace.adapters.bitbucket_forge import BitbucketForge
from terrace.adapters.bitbucket_server_forge import BitbucketServerForge
from terrace.adapters.forge import ForgeByKind
from terrace.domain.destinations import Allowance
from test_vcs_deliveries import _runs, _work

TOKEN = "forge-personal-access-token"
CONFIG = {"main.tf": 'output "x" { value = 1 }\n', "env/prod/main.tf": 'output "y" { value = 2 }\n'}


@dataclass(frozen=True)
class Provider:
    service_provider: str
    twin: type[ForgeTwin]
    repo: str
    source: str
    push_event: str
    pr_event: str
    states: tuple[str, str]  # what the forge shows: waiting or running, then planned
    push_payload: Callable[[Any, str, str, str, str], dict[str, Any]]  # twin, repo, branch, before, after
    pr_payload: Callable[[Any, str, int, str, str, str | None], dict[str, Any]]  # twin, repo, n, head, ref, fork


def _bitbucket_push(twin: Any, repo: str, branch: str, before: str, after: str) -> dict[str, Any]:
    return dict(twin.push_payload(repo, branch, before, after))


def _bitbucket_pr(twin: Any, repo: str, number: int, head: str, ref: str, fork: str | None) -> dict[str, Any]:
    return dict(twin.pull_request_payload(repo, number, head, ref, head_repo=fork))


def _azure_push(twin: Any, repo: str, branch: str, before: str, after: str) -> dict[str, Any]:
    return dict(twin.push_payload(repo, f"refs/heads/{branch}", before, after))


def _azure_pr(twin: Any, repo: str, number: int, head: str, ref: str, fork: str | None) -> dict[str, Any]:
    return dict(twin.pull_request_payload(repo, number, head, ref, fork=fork))


PROVIDERS = {
    "bitbucket_hosted": Provider("bitbucket_hosted", BitbucketCloudTwin, "octo/infra", "bitbucket", "repo:push",
                                 "pullrequest:created", ("INPROGRESS", "SUCCESSFUL"), _bitbucket_push, _bitbucket_pr),
    "bitbucket_data_center": Provider("bitbucket_data_center", BitbucketServerTwin, "PRJ/infra", "bitbucket",
                                      "repo:refs_changed", "pr:opened", ("INPROGRESS", "SUCCESSFUL"),
                                      _bitbucket_push, _bitbucket_pr),
    "ado_services": Provider("ado_services", AzureDevOpsTwin, "octo/proj/_git/infra", "ado", "git.push",
                             "git.pullrequest.created", ("pending", "succeeded"), _azure_push, _azure_pr),
}  # fmt: skip
FORKS = {
    "bitbucket_hosted": "mallory/infra",
    "bitbucket_data_center": "MAL/infra",
    "ado_services": "mal/proj/_git/infra",
}


@dataclass
class World:
    provider: Provider
    twin: Any
    env: RunEnv
    work: Path

    def push(self, files: dict[str, str], branch: str = "main", message: str = "change") -> tuple[str, str]:
        git("checkout", "--quiet", "-B", branch, cwd=self.work)
        moved = self.twin.commit_and_push(self.work, files, message, branch)
        git("checkout", "--quiet", "main", cwd=self.work)
        return tuple(moved)  # type: ignore[return-value]

    def deliver(self, event: str, payload: dict[str, Any], delivery: str | None = None, forged: bool = False) -> Any:
        """The twin's deliveries of `payload`, posted to the app; the answers."""
        if self.provider.service_provider == "ado_services":
            sent = self.twin.deliveries(self.provider.repo, event, payload, password="forged" if forged else None)
        else:
            sent = self.twin.deliveries(self.provider.repo, event, payload, delivery, "forged" if forged else None)
        assert sent, "no hook of the repository takes the event"
        return [self.env.client.post(urlsplit(url).path, content=body, headers=headers) for url, headers, body in sent]

    def statuses(self, sha: str) -> list[str]:
        return [body["state"] for at, body in self.twin.repos[self.provider.repo].statuses if at == sha]


@pytest.fixture(params=list(PROVIDERS))
def world(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[World]:
    provider = PROVIDERS[request.param]
    allowance = Allowance.parse(["127.0.0.0/8"])
    forge = ForgeByKind({"bitbucket": BitbucketForge(allowance), "bitbucket_server": BitbucketServerForge(allowance),
                         "azure_devops": AzureDevOpsForge(allowance)})  # fmt: skip
    with provider.twin(tmp_path, TOKEN) as twin:
        work = twin.create(provider.repo)
        twin.commit_and_push(work, CONFIG, "first")
        env = make_run_env(forge=forge)
        yield World(provider, twin, env, work)
        assert twin.problems == []


def _connect(w: World, **attributes: Any) -> str:
    client = {"data": {"type": "oauth-clients", "attributes": {
        "service-provider": w.provider.service_provider, "http-url": w.twin.http_url, "api-url": w.twin.api_url,
        "oauth-token-string": TOKEN}}}  # fmt: skip
    created = w.env.api("POST", "/organizations/acme/oauth-clients", client)
    assert created.status_code == 201, created.text
    token_id = created.json()["data"]["relationships"]["oauth-tokens"]["data"][0]["id"]
    body = {"data": {"type": "workspaces", "attributes": {"queue-all-runs": True, **attributes, "vcs-repo": {
        "identifier": w.provider.repo, "oauth-token-id": token_id}}}}  # fmt: skip
    updated = w.env.api("PATCH", f"/workspaces/{w.env.workspace_id}", body)
    assert updated.status_code == 200, updated.text
    shown = updated.json()["data"]["attributes"]["vcs-repo"]
    assert shown["service-provider"] == w.provider.service_provider and shown["identifier"] == w.provider.repo
    return str(token_id)


def test_a_push_runs_the_confirmed_commit_and_reports_on_it(world: World) -> None:
    _connect(world, **{"auto-apply": True})
    assert world.twin.repos[world.provider.repo].hooks  # the webhook registered, with its own secret
    before, after = world.push({"main.tf": CONFIG["main.tf"] + "# two\n"}, message="a change")
    answers = world.deliver(world.provider.push_event, world.provider.push_payload(world.twin, world.provider.repo,
                                                                                   "main", before, after))  # fmt: skip
    assert [(a.status_code, a.json()["meta"]["delivery"]) for a in answers] == [(202, "queued")]
    _work(world.env)
    [run] = _runs(world.env)
    assert run["attributes"]["message"].strip() == "a change" and run["attributes"]["plan-only"] is False
    cv_id = run["relationships"]["configuration-version"]["data"]["id"]
    cv = world.env.api("GET", f"/configuration-versions/{cv_id}?include=ingress_attributes").json()
    assert cv["data"]["attributes"]["source"] == world.provider.source
    ingress = cv["included"][0]["attributes"]
    assert (ingress["commit-sha"], ingress["branch"], ingress["identifier"]) == (after, "main", world.provider.repo)
    with tarfile.open(fileobj=io.BytesIO(world.env.blobs.get(f"config/{world.env.workspace_id}/{cv_id}.tar.gz"))) as t:
        assert sorted(m.name for m in t.getmembers() if m.isfile()) == ["env/prod/main.tf", "main.tf"]
    assert world.statuses(after)[:1] == [world.provider.states[0]]
    world.env.work_next()  # the plan
    _work(world.env)
    world.env.work_next()  # the apply
    _work(world.env)
    assert world.statuses(after)[-1] == world.provider.states[1]
    assert run["id"] in world.twin.repos[world.provider.repo].statuses[-1][1].get("url", "") + str(
        world.twin.repos[world.provider.repo].statuses[-1][1].get("targetUrl", "")
    )


def test_a_pull_request_gets_a_speculative_plan_with_its_status_and_a_fork_s_gets_none(world: World) -> None:
    _connect(world)
    _, head = world.push({"main.tf": CONFIG["main.tf"] + "# feature\n"}, branch="feature")
    pr = world.provider.pr_payload(world.twin, world.provider.repo, 7, head, "feature", None)
    assert [a.status_code for a in world.deliver(world.provider.pr_event, pr)] == [202]
    _work(world.env)
    [plan] = _runs(world.env)
    assert plan["attributes"]["plan-only"] is True
    cv_id = plan["relationships"]["configuration-version"]["data"]["id"]
    ingress = world.env.api("GET", f"/configuration-versions/{cv_id}/ingress-attributes").json()["data"]["attributes"]
    assert ingress["is-pull-request"] is True and ingress["pull-request-number"] == 7
    assert ingress["commit-sha"] == head and ingress["branch"] == "feature"  # the full SHA, read from the API
    assert world.statuses(head)[:1] == [world.provider.states[0]]
    world.env.work_next()
    _work(world.env)
    assert world.statuses(head)[-1] == world.provider.states[1]
    if world.provider.service_provider == "ado_services":  # its pull request's page shows the pull request's own
        assert [(n, body["state"]) for n, body in world.twin.pull_statuses][-1] == (7, "succeeded")
    fork = world.provider.pr_payload(
        world.twin, world.provider.repo, 8, head, "feature", FORKS[world.provider.service_provider]
    )
    assert [a.status_code for a in world.deliver(world.provider.pr_event, fork)] == [202]
    _work(world.env)
    assert len(_runs(world.env)) == 1  # the organization allows no plan of a fork's pull request


def test_forged_and_replayed_deliveries_are_refused_and_a_push_outside_the_patterns_starts_nothing(
    world: World,
) -> None:
    _connect(world, **{"trigger-patterns": ["env/**"], "file-triggers-enabled": True})
    before, after = world.push({"README.md": "docs\n"})
    payload = world.provider.push_payload(world.twin, world.provider.repo, "main", before, after)
    assert [a.status_code for a in world.deliver(world.provider.push_event, payload, forged=True)] == [401]
    assert [a.status_code for a in world.deliver(world.provider.push_event, payload, "d-1")] == [202]
    assert [a.status_code for a in world.deliver(world.provider.push_event, payload, "d-1")] == [409]  # replayed
    _work(world.env)
    assert _runs(world.env) == []  # README.md is outside env/**
    before, after = world.push({"env/prod/main.tf": "# changed\n"})
    payload = world.provider.push_payload(world.twin, world.provider.repo, "main", before, after)
    assert [a.status_code for a in world.deliver(world.provider.push_event, payload, "d-2")] == [202]
    _work(world.env)
    assert len(_runs(world.env)) == 1
    body = {"data": {"type": "workspaces", "attributes": {"vcs-repo": None}}}
    assert world.env.api("PATCH", f"/workspaces/{world.env.workspace_id}", body).status_code == 200
    assert world.twin.repos[world.provider.repo].hooks == {}  # disconnecting deleted the webhook
