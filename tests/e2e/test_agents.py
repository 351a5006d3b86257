"""Agent pools through real clients: a workspace in the agent execution mode queues its run, which waits (Terrace's
runners never take it, nor an agent of another pool or organization) until `terrace agent` (a subprocess holding a
pool token, configured like tfc-agent) takes it; terraform 1.0.3's remote apply then completes. SIGTERM to an agent
mid-plan hands the plan back to the pool's queue."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from e2e_runs import RUN_TIMEOUT_S, TWO_RESOURCES, current_state, remote_dir, run, runs, slow_plan, wait_for
from terrace.local.workers import runner_env

pytestmark = pytest.mark.e2e

TERRACE = Path(sys.executable).parent / "terrace"


def _pool(api: Any, organization: str, name: str) -> tuple[str, str]:
    """A new agent pool of `organization` and a token of it: (pool id, token secret)."""
    body = {"data": {"type": "agent-pools", "attributes": {"name": name}}}
    pool = api.request("POST", f"/api/v2/organizations/{organization}/agent-pools", body, expect=201).json()["data"]
    token_body = {"data": {"type": "authentication-tokens", "attributes": {"description": f"{name} token"}}}
    token = api.request("POST", f"/api/v2/agent-pools/{pool['id']}/authentication-tokens", token_body, expect=201)
    return pool["id"], token.json()["data"]["attributes"]["token"]


def _ask_for_a_job(stack: Any, token: str, name: str) -> int:
    """Register as an agent with `token` and ask for a job once: the HTTP status (204: nothing for it)."""
    with httpx.Client(base_url=stack.url, verify=stack.ca_bundle, headers={"Authorization": f"Bearer {token}"}) as http:
        agent = http.post("/api/agent/register", json={"name": name})
        assert agent.status_code == 200, agent.text
        answer = http.post("/api/runner/jobs/next", json={"runner_id": agent.json()["agent_id"]})
        return answer.status_code


@pytest.fixture
def start_agent(run_local_stack: Any) -> Iterator[Any]:
    """start_agent(token, name) -> a `terrace agent` process (stopped by the fixture if still running)."""
    started: list[subprocess.Popen[str]] = []

    def start(token: str, name: str) -> subprocess.Popen[str]:
        stack = run_local_stack
        env = runner_env(stack.settings.public_url, stack.info.ca_bundle, stack.state_dir)
        del env["TERRACE_API_URL"], env["TERRACE_RUNNER_IDLE_EXIT_S"], env["TERRACE_RUNNER_WAIT_S"]
        env |= {
            "TFC_AGENT_TOKEN": token,
            "TFC_ADDRESS": run_local_stack.settings.public_url,
            "TFC_AGENT_NAME": name,
            "TFC_AGENT_AUTO_UPDATE": "disabled",  # accepted, ignored
            "TERRACE_WORK_DIR": str(run_local_stack.state_dir / f"agent-{name}-work"),  # job uids pass its parents
            "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
        }
        process = subprocess.Popen([str(TERRACE), "agent"], env=env, text=True, stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT)  # fmt: skip
        started.append(process)
        return process

    yield start
    for process in started:
        if process.poll() is None:
            process.kill()
        process.wait()
        if process.stdout is not None:
            process.stdout.close()


def _plan_log(api: Any, plan_id: str) -> str:
    url = api.request("GET", f"/api/v2/plans/{plan_id}").json()["data"]["attributes"]["log-read-url"]
    return str(api.http.get(url).text)


def _agents(api: Any, pool_id: str) -> list[dict[str, Any]]:
    data: list[dict[str, Any]] = api.request("GET", f"/api/v2/agent-pools/{pool_id}/agents").json()["data"]
    return data


def test_an_agent_mode_workspace_runs_on_its_pools_agent(run_stack, run_api, run_terraform, unique, start_agent):
    org = run_stack.organization
    pool_id, token = _pool(run_api, org, unique("pool"))
    _, other_token = _pool(run_api, org, unique("other-pool"))
    other_org = unique("elsewhere")
    org_body = {"data": {"type": "organizations", "attributes": {"name": other_org, "email": "ops@example.com"}}}
    run_api.request("POST", "/api/v2/organizations", org_body, expect=201)
    _, elsewhere_token = _pool(run_api, other_org, unique("pool"))
    name = unique("agentws")
    attributes = {"execution-mode": "agent", "agent-pool-id": pool_id, "terraform-version": "1.0.3"}
    ws = run_api.create_workspace(name, **attributes)
    assert ws["relationships"]["agent-pool"]["data"] == {"type": "agent-pools", "id": pool_id}
    tf = remote_dir(run_stack, run_terraform, name, TWO_RESOURCES)

    applying = tf.start("apply", "-auto-approve", "-input=false", "-no-color")
    queued = wait_for(lambda: runs(run_api, ws["id"]), RUN_TIMEOUT_S, what="the run")[0]
    wait_for(lambda: run(run_api, queued["id"])["attributes"]["status"] == "plan_queued", RUN_TIMEOUT_S)
    # nobody else gets it: an agent of another pool, one of another organization, Terrace's runners
    assert _ask_for_a_job(run_stack, other_token, "other") == 204
    assert _ask_for_a_job(run_stack, elsewhere_token, "elsewhere") == 204
    assert run(run_api, queued["id"])["attributes"]["status"] == "plan_queued"
    assert applying.poll() is None  # terraform waits for the run

    agent = start_agent(token, "laptop")
    out, _ = applying.communicate(timeout=RUN_TIMEOUT_S)

    assert applying.returncode == 0, out
    assert "Apply complete! Resources: 2 added, 0 changed, 0 destroyed." in out
    assert current_state(run_api, ws["id"])["resources"] == {"null_resource.a": 1, "null_resource.b": 1}
    (listed,) = _agents(run_api, pool_id)
    assert listed["attributes"]["name"] == "laptop" and listed["attributes"]["status"] in ("idle", "busy")
    assert listed["attributes"]["ip-address"] == "127.0.0.1"
    agent.send_signal(signal.SIGTERM)
    assert agent.wait(timeout=60) == 0
    assert _agents(run_api, pool_id)[0]["attributes"]["status"] == "exited"


def test_sigterm_mid_plan_hands_the_plan_back(run_stack, run_api, run_terraform, unique, start_agent):
    pool_id, token = _pool(run_api, run_stack.organization, unique("pool"))
    name = unique("handback")
    attributes = {"execution-mode": "agent", "agent-pool-id": pool_id, "terraform-version": "1.0.3"}
    ws_id = run_api.create_workspace(name, **attributes)["id"]
    tf = remote_dir(run_stack, run_terraform, name, slow_plan(2000))
    agent = start_agent(token, "leaving")
    planning = tf.start("plan", "-input=false", "-no-color")
    try:
        first = wait_for(lambda: runs(run_api, ws_id), RUN_TIMEOUT_S, what="the run")[0]
        plan_id = first["relationships"]["plan"]["data"]["id"]

        def plan_log_started() -> bool:
            planning_now = run(run_api, first["id"])["attributes"]["status"] == "planning"
            return planning_now and "Terraform" in _plan_log(run_api, plan_id)

        wait_for(plan_log_started, RUN_TIMEOUT_S, what="the agent's plan under way")
        agent.send_signal(signal.SIGTERM)
        said, _ = agent.communicate(timeout=60)
        assert agent.returncode == 0, said

        handed_back = run(run_api, first["id"])
        assert handed_back["attributes"]["status"] == "plan_queued"  # back in the pool's queue, for another agent
        assert "handed the plan back" in _plan_log(run_api, plan_id)
        run_api.request("POST", f"/api/v2/runs/{first['id']}/actions/cancel", {}, expect=202)
        wait_for(lambda: run(run_api, first["id"])["attributes"]["status"] == "canceled", 60, what="the cancel")
    finally:
        planning.kill()
        planning.wait()
