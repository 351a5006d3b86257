"""A GitLab project end to end (the GitHub path is `test_vcs_runs.py`'s): a workspace connected through the API to
a project of the GitLab twin (real git repositories, every REST call checked against GitLab's documented API, every
payload against its documented webhook events) on the embedded stack's runners: a push is applied and its commit's
status goes running -> success in GitLab's names; a delivery with a wrong `X-Gitlab-Token` is refused; deleting the
workspace deletes the project's hook. One run (about 4 s): the GitLab path's one real-client test."""

from __future__ import annotations

import shutil
import uuid
from typing import Any

import pytest
from e2e_runs import RUN_TIMEOUT_S, remote_workspace, runs, wait_final, wait_for
from gitlab_twin import GitLabTwin

pytestmark = pytest.mark.e2e

TOKEN = "glpat-e2e-personal-access-token"
PROJECT = "platform/team/infra"
CONFIG = 'resource "null_resource" "a" {}\n'


def test_a_push_to_a_gitlab_project_is_applied_and_its_commit_shows_it(
    run_stack: Any, run_api: Any, tmp_path: Any
) -> None:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    with GitLabTwin(tmp_path, TOKEN, ca_bundle=run_stack.ca_bundle) as twin:
        work = twin.create(PROJECT)
        twin.commit_and_push(work, {"main.tf": CONFIG}, "first")
        client = {"data": {"type": "oauth-clients", "attributes": {
            "service-provider": "gitlab_community_edition", "http-url": twin.http_url, "api-url": twin.api_url,
            "oauth-token-string": TOKEN}}}  # fmt: skip
        created = run_api.request("POST", f"/api/v2/organizations/{run_stack.organization}/oauth-clients", client, 201)
        token_id = created.json()["data"]["relationships"]["oauth-tokens"]["data"][0]["id"]
        ws_id = remote_workspace(run_api, f"gitlab-{uuid.uuid4().hex[:8]}", **{"auto-apply": True,
            "queue-all-runs": True, "vcs-repo": {"identifier": PROJECT, "oauth-token-id": token_id}})  # fmt: skip
        try:
            before, after = twin.commit_and_push(work, {"main.tf": CONFIG + "# two\n"}, "change")
            payload = twin.push_payload(PROJECT, "refs/heads/main", before, after)
            assert [a.status_code for a in twin.deliver(PROJECT, "push", payload, token="wrong")] == [401]
            assert [a.status_code for a in twin.deliver(PROJECT, "push", payload)] == [202]
            found = wait_for(lambda: next(iter(runs(run_api, ws_id)), None), RUN_TIMEOUT_S, what="the push's run")
            run = wait_final(run_api, found["id"], RUN_TIMEOUT_S)
            assert run["attributes"]["status"] == "applied", run["attributes"]

            def states() -> list[str]:
                return [body["state"] for sha, body in twin.repos[PROJECT].statuses if sha == after]

            wait_for(lambda: states()[-1:] == ["success"], 30, what="the success status")
            assert "running" in states() and all(s in ("pending", "running", "success") for s in states())
            assert twin.repos[PROJECT].statuses[0][1]["name"].startswith("Terrace/")
        finally:
            run_api.request("DELETE", f"/api/v2/workspaces/{ws_id}", expect=204)
        assert twin.repos[PROJECT].hooks == {} and twin.problems == []
