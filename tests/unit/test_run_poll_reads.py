"""What the CLI's polls cost: terraform polls the run, its plan/apply and their log-read URLs all through a
run. Each answer reads the table a fixed, small number of times (the token, the run, its workspace, ...);
a change that adds a read fails here. Every poll sees the run as it is now (no caching)."""

from __future__ import annotations

from typing import Any

import pytest
from run_helpers import RunEnv, make_run_env
from test_web_ui_reads import counting

# token + run + workspace (+ the username claim of created-by, + its run events; + the open-runs index while
# the run has a queue position)
RUN_POLL_READS = {"plan_queued": 5, "planning": 4}  # the caller's own username is not looked up
PHASE_POLL_READS = 3  # token + run + workspace
# run + (variables) + chunks; archived: run + the archive's range (the in-memory blob store reads it through get)
LOG_POLL_READS = {"new bytes": 3, "nothing new": 2, "archived": 3}


@pytest.fixture
def env() -> RunEnv:
    return make_run_env()


def reads(env: RunEnv, calls: list[str], url: str, *, auth: bool = True) -> tuple[int, Any]:
    calls.clear()
    response = env.client.get(url, headers=env.headers if auth else {})
    assert response.status_code == 200, response.text
    return len(calls), response


def log_path(document: dict[str, Any]) -> str:
    return "/" + document["attributes"]["log-read-url"].split("://", 1)[1].split("/", 1)[1]


def test_run_plan_and_log_polls_read_the_table_a_fixed_number_of_times(env: RunEnv, monkeypatch: Any) -> None:
    run_id = env.create_run(env.upload_config())["id"]
    calls = counting(env.container, monkeypatch, org_cache_s=float("inf"))  # a polled server has its org cached
    # one look per log poll: an empty read of a running phase is otherwise held and repeated (test_log_read_wait.py)
    monkeypatch.setattr(env.container.logs, "_read_wait_s", 0.0)

    count, response = reads(env, calls, f"/api/v2/runs/{run_id}")
    assert response.json()["data"]["attributes"]["status"] == "plan_queued"
    assert count == RUN_POLL_READS["plan_queued"], calls

    spec = env.claim()
    put = env.runner("PUT", f"/jobs/{spec['job_id']}/logs?offset=0", content=b"Terraform will perform\n")
    assert put.status_code == 204
    count, response = reads(env, calls, f"/api/v2/runs/{run_id}?include=plan,apply")
    run = response.json()["data"]
    assert run["attributes"]["status"] == "planning"  # the claim is visible to the very next poll
    assert run["relationships"]["created-by"]["data"]["id"].startswith("user-")
    assert run["relationships"]["run-events"]["data"]
    assert count == RUN_POLL_READS["planning"], calls

    plan_id = run["relationships"]["plan"]["data"]["id"]
    count, response = reads(env, calls, f"/api/v2/plans/{plan_id}")
    assert count == PHASE_POLL_READS, calls
    apply_id = run["relationships"]["apply"]["data"]["id"]
    assert reads(env, calls, f"/api/v2/applies/{apply_id}")[0] == PHASE_POLL_READS, calls

    log = log_path(response.json()["data"])
    count, body = reads(env, calls, log + "?offset=0&limit=65536", auth=False)
    assert body.content == b"\x02Terraform will perform\n" and count == LOG_POLL_READS["new bytes"], calls
    count, body = reads(env, calls, log + f"?offset={len(body.content)}&limit=65536", auth=False)
    assert body.content == b"" and count == LOG_POLL_READS["nothing new"], calls

    done = env.runner("POST", f"/jobs/{spec['job_id']}/finish", json={"runner_id": "r1", "status": "finished"})
    assert done.status_code == 200
    count, body = reads(env, calls, log + "?offset=0&limit=65536", auth=False)
    assert body.content.endswith(b"\x03") and count == LOG_POLL_READS["archived"], calls
