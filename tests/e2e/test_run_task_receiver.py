"""Run tasks end to end: a real HTTP receiver on loopback (the run stack allows it, as `terrace dev` does) checks each
request's X-TFC-Task-Signature, reads the plan JSON with the access token it was given and calls back; Terraform
1.0.3 drives remote runs through its `remote` backend (auto-apply workspaces: the backend waits on the apply's log
while the post-plan stage decides); Terraform 1.11's and OpenTofu 1.9's `cloud` block print the post-plan tasks."""

from __future__ import annotations

import hashlib
import hmac
import json
import ssl
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest
from e2e_runs import RUN_TIMEOUT_S, TWO_RESOURCES, remote_dir, remote_workspace, runs, wait_final
from test_cloud_block import TOFU_REPEATS, tool_of
from test_cloud_block import work as work  # noqa: F401 (the `cloud` block working directories, a fixture)

Api = StackInfo = Terraform = Any

KEY = "receiver-secret"


@dataclass
class Receiver:
    """Answers each run task request 200, then calls back from a thread of its own with the verdict its path names
    (`/pass`, `/fail`)."""

    ca_bundle: str
    url: str = ""
    requests: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    threads: list[threading.Thread] = field(default_factory=list)
    plan_json_read: list[str] = field(default_factory=list)

    def handle(self, path: str, body: bytes, signature: str | None) -> None:
        expected = hmac.new(KEY.encode(), body, hashlib.sha512).hexdigest()
        if signature != expected:
            self.problems.append(f"bad signature on {path}")
            return
        payload = json.loads(body)
        self.requests.append({"path": path, **payload})
        thread = threading.Thread(target=self._call_back, args=(path, payload), daemon=True)
        self.threads.append(thread)
        thread.start()

    def _call_back(self, path: str, payload: dict[str, Any]) -> None:
        verify = ssl.create_default_context(cafile=self.ca_bundle)
        bearer = {"Authorization": f"Bearer {payload['access_token']}"}
        try:
            with httpx.Client(verify=verify, timeout=30) as client:
                if payload.get("plan_json_api_url"):
                    plan = client.get(payload["plan_json_api_url"], headers=bearer, follow_redirects=True)
                    if plan.status_code == 200 and "resource_changes" in plan.json():
                        self.plan_json_read.append(payload["run_id"])
                verdict = "passed" if path == "/pass" else "failed"
                attributes = {
                    "status": verdict,
                    "message": f"receiver says {verdict}",
                    "url": "https://checks.example.com",
                }
                body = {"data": {"type": "task-results", "attributes": attributes}}
                answer = client.patch(
                    payload["task_result_callback_url"],
                    json=body,
                    headers={**bearer, "Content-Type": "application/vnd.api+json"},
                )
                if answer.status_code != 200:
                    self.problems.append(f"callback answered {answer.status_code}: {answer.text}")
        except Exception as exc:  # reported by the test
            self.problems.append(f"callback failed: {exc!r}")


@pytest.fixture
def receiver(run_stack: StackInfo) -> Iterator[Receiver]:
    found = Receiver(run_stack.ca_bundle)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.send_response(200)
            self.end_headers()
            found.handle(self.path, body, self.headers.get("X-TFC-Task-Signature"))

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    found.url = f"http://127.0.0.1:{server.server_address[1]}"
    serving = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)  # quick stop
    serving.start()
    try:
        yield found
    finally:
        server.shutdown()
        server.server_close()
        serving.join(10)
        for thread in found.threads:
            thread.join(30)


def task(api: Api, receiver: Receiver, name: str, path: str) -> str:
    body = {"data": {"type": "tasks", "attributes": {
        "name": name, "url": receiver.url + path, "category": "task", "hmac-key": KEY}}}  # fmt: skip
    created = api.request("POST", f"/api/v2/organizations/{api.stack.organization}/tasks", body, expect=201)
    return str(created.json()["data"]["id"])


def attach(api: Api, workspace_id: str, task_id: str, level: str, stages: list[str]) -> None:
    body = {
        "data": {
            "type": "workspace-tasks",
            "attributes": {"enforcement-level": level, "stages": stages},
            "relationships": {"task": {"data": {"type": "tasks", "id": task_id}}},
        }
    }
    api.request("POST", f"/api/v2/workspaces/{workspace_id}/tasks", body, expect=201)


def stage_results(api: Api, run_id: str) -> dict[str, list[dict[str, Any]]]:
    document = api.request("GET", f"/api/v2/runs/{run_id}/task-stages?include=task_results").json()
    results = {r["id"]: r["attributes"] for r in document.get("included", [])}
    return {
        s["attributes"]["stage"]: [results[r["id"]] for r in s["relationships"]["task-results"]["data"]]
        for s in document["data"]
    }


def test_passing_mandatory_tasks_let_terraform_apply(
    run_api: Api, run_stack: StackInfo, run_terraform: Callable[..., Terraform], unique: Callable[[str], str],
    receiver: Receiver,
) -> None:  # fmt: skip
    name = unique("tasks-pass")
    ws = remote_workspace(run_api, name, **{"auto-apply": True})
    attach(run_api, ws, task(run_api, receiver, unique("pass"), "/pass"), "mandatory", ["pre_plan", "post_plan"])
    tf = remote_dir(run_stack, run_terraform, name, TWO_RESOURCES)
    tf.apply(timeout=RUN_TIMEOUT_S)
    [run] = runs(run_api, ws)
    assert wait_final(run_api, run["id"])["attributes"]["status"] == "applied"
    assert receiver.problems == []
    assert sorted(r["stage"] for r in receiver.requests) == ["post_plan", "pre_plan"]
    assert receiver.plan_json_read == [run["id"]]  # the access token read the plan JSON
    shown = stage_results(run_api, run["id"])
    assert [r["status"] for r in shown["pre_plan"]] == ["passed"]
    assert [r["status"] for r in shown["post_plan"]] == ["passed"]
    events = [e["attributes"]["action"] for e in run_api.request("GET", f"/api/v2/runs/{run['id']}/run-events")
              .json()["data"]]  # fmt: skip
    assert {"pre_plan_running", "pre_plan_completed", "post_plan_running", "post_plan_completed"} <= set(events)


def test_a_failing_mandatory_task_stops_the_run_an_advisory_one_does_not(
    run_api: Api, run_stack: StackInfo, run_terraform: Callable[..., Terraform], unique: Callable[[str], str],
    receiver: Receiver,
) -> None:  # fmt: skip
    failing = task(run_api, receiver, unique("fail"), "/fail")
    stopped = unique("tasks-stop")
    ws = remote_workspace(run_api, stopped, **{"auto-apply": True})
    attach(run_api, ws, failing, "mandatory", ["post_plan"])
    tf = remote_dir(run_stack, run_terraform, stopped, TWO_RESOURCES)
    tf.apply(check=False, timeout=RUN_TIMEOUT_S)
    [run] = runs(run_api, ws)
    ended = wait_final(run_api, run["id"])["attributes"]
    assert ended["status"] == "errored" and "post-plan task stage failed" in ended["error-message"]
    assert [r["status"] for r in stage_results(run_api, run["id"])["post_plan"]] == ["failed"]
    assert run_api.request("GET", f"/api/v2/workspaces/{ws}/current-state-version", expect=None).status_code == 404

    advised = unique("tasks-advise")
    ws2 = remote_workspace(run_api, advised, **{"auto-apply": True})
    attach(run_api, ws2, failing, "advisory", ["post_plan"])
    tf2 = remote_dir(run_stack, run_terraform, advised, TWO_RESOURCES, name="advised")
    tf2.apply(timeout=RUN_TIMEOUT_S)
    [run2] = runs(run_api, ws2)
    assert wait_final(run_api, run2["id"])["attributes"]["status"] == "applied"
    [advice] = stage_results(run_api, run2["id"])["post_plan"]
    assert advice["status"] == "failed" and advice["message"] == "receiver says failed"
    assert receiver.problems == []


@pytest.mark.parametrize("client", TOFU_REPEATS)
def test_the_cloud_block_waits_for_the_tasks_and_applies(
    client: Any,
    run_api: Api,
    work: Any,
    unique: Callable[[str], str],
    receiver: Receiver,  # noqa: F811
) -> None:
    name = unique("tasks-cloud")
    ws = str(run_api.create_workspace(name, **{"execution-mode": "remote", "iac-platform": tool_of(client)})["id"])
    attach(run_api, ws, task(run_api, receiver, unique("cloud"), "/pass"), "mandatory", ["post_plan"])
    done = work(client, f'name = "{name}"')
    output = done.run("apply", "-auto-approve")
    assert "Post-plan Tasks:" in output and "All tasks completed! 1 passed, 0 failed" in output
    assert "receiver says passed" in output and "Overall Result: Passed" in output
    [run] = runs(run_api, ws)
    assert wait_final(run_api, run["id"])["attributes"]["status"] == "applied"
    assert receiver.problems == []
