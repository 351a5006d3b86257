"""A run's `invoke-action-addrs` (terraform 1.14+ `apply -invoke=...`, go-tfe's `RunCreateOptions.InvokeActionAddrs`):
accepted, bounded like `target-addrs`, stored, serialized back and handed to the runner in the job spec, with the
run's identity the job's `TFC_*` variables are made of."""

from __future__ import annotations

import pytest
from run_helpers import RunEnv, make_run_env
from terrace.domain import limits


@pytest.fixture
def env() -> RunEnv:
    return make_run_env()


def test_invoke_action_addrs_are_stored_served_and_reach_the_job_spec(env: RunEnv) -> None:
    run = env.create_run(env.upload_config(), **{"invoke-action-addrs": ["action.local_command.hello"]})
    assert run["attributes"]["invoke-action-addrs"] == ["action.local_command.hello"]
    assert env.run(run["id"])["attributes"]["invoke-action-addrs"] == ["action.local_command.hello"]
    spec = env.claim()
    assert spec["operation"]["invoke_action_addrs"] == ["action.local_command.hello"]


def test_a_run_without_actions_serializes_none_and_its_spec_names_its_project(env: RunEnv) -> None:
    run = env.create_run(env.upload_config())
    assert run["attributes"]["invoke-action-addrs"] is None
    spec = env.claim()
    assert spec["operation"]["invoke_action_addrs"] == []
    assert spec["project_name"] == "Default Project"
    assert spec["run_id"] == run["id"] and spec["workspace_name"] == "app"
    assert (spec["git_branch"], spec["git_commit_sha"], spec["git_tag"]) == ("", "", "")


def test_go_tfe_s_address_shape_is_accepted_as_hcp_does(env: RunEnv) -> None:
    """go-tfe v1.109's `TestRunsCreate/with additional attributes` sends `actions.foo.bar`; terraform judges it."""
    run = env.create_run(env.upload_config(), **{"invoke-action-addrs": ["actions.foo.bar"]})
    assert run["attributes"]["invoke-action-addrs"] == ["actions.foo.bar"]


@pytest.mark.parametrize(
    "value",
    [
        "action.x.y",
        [1],
        [""],
        ["action.x." + "y" * limits.RUN_ADDR_MAX],
        ["action.x.y"] * (limits.RUN_ADDRS_MAX + 1),
    ],
)
def test_bad_invoke_action_addrs_are_422(env: RunEnv, value: object) -> None:
    cv = env.upload_config()
    body = {
        "data": {
            "type": "runs",
            "attributes": {"invoke-action-addrs": value},
            "relationships": {
                "workspace": {"data": {"type": "workspaces", "id": env.workspace_id}},
                "configuration-version": {"data": {"type": "configuration-versions", "id": cv}},
            },
        }
    }
    response = env.api("POST", "/runs", body)
    assert response.status_code == 422, response.text
    assert response.json()["errors"][0]["source"]["pointer"] == "/data/attributes/invoke-action-addrs"
    assert env.api("GET", f"/workspaces/{env.workspace_id}/runs").json()["data"] == []
