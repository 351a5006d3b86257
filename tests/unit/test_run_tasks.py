"""Run tasks through the TFC API on the memory container: managing tasks and attachments, a run's request (payload,
signature, access token), the callback, and what each outcome does to the run."""

from __future__ import annotations

import hashlib
import hmac
import json
from typing import Any

import pytest
from run_helpers import RunEnv, make_run_env
from table_items import memory_items
from terrace.adapters.memory_events import MemoryEventPublisher
from terrace.adapters.memory_outbound import MemoryOutbound
from terrace.adapters.outbound import OutboundResponse
from terrace.domain.principal import PrincipalKind

URL = "https://checks.example.com/hook"


@pytest.fixture
def env() -> RunEnv:
    return make_run_env()


def deliver(env: RunEnv) -> None:
    publisher = env.container.publisher
    assert isinstance(publisher, MemoryEventPublisher)
    while publisher.events:
        pending, publisher.events[:] = list(publisher.events), []
        for event in pending:
            env.container.events.handle(event)


def outbound(env: RunEnv) -> MemoryOutbound:
    assert isinstance(env.container.outbound, MemoryOutbound)
    return env.container.outbound


def create_task(env: RunEnv, **attrs: Any) -> dict[str, Any]:
    body = {"data": {"type": "tasks", "attributes": {"name": "checks", "url": URL, "category": "task", **attrs}}}
    response = env.api("POST", f"/organizations/{env.organization}/tasks", body)
    assert response.status_code == 201, response.text
    return dict(response.json()["data"])


def attach(env: RunEnv, task_id: str, level: str = "mandatory", **attrs: Any) -> dict[str, Any]:
    body = {
        "data": {
            "type": "workspace-tasks",
            "attributes": {"enforcement-level": level, **attrs},
            "relationships": {"task": {"data": {"type": "tasks", "id": task_id}}},
        }
    }
    response = env.api("POST", f"/workspaces/{env.workspace_id}/tasks", body)
    assert response.status_code == 201, response.text
    return dict(response.json()["data"])


def status(env: RunEnv, run: dict[str, Any]) -> str:
    return str(env.run(run["id"])["attributes"]["status"])


def callback(env: RunEnv, payload: dict[str, Any], status: str, token: str | None = None, **extra: Any) -> Any:
    body = {"data": {"type": "task-results", "attributes": {"status": status, "message": f"{status}!", **extra}}}
    return env.client.patch(
        local(payload["task_result_callback_url"]),
        json=body,
        headers={"Authorization": f"Bearer {token or payload['access_token']}"},
    )


def local(url: str) -> str:
    """The path of an absolute URL of the server."""
    return "/api/v2" + url.split("/api/v2", 1)[1]


def sent_payload(env: RunEnv) -> tuple[dict[str, Any], dict[str, str], bytes]:
    request = outbound(env).sent[-1]
    return json.loads(request.body), request.headers, request.body


def test_managing_tasks(env: RunEnv) -> None:
    task = create_task(env, **{"hmac-key": "s3cret", "description": "checks things"})
    assert task["attributes"]["hmac-key"] is None and task["attributes"]["category"] == "task"
    assert task["relationships"]["organization"]["data"]["id"] == env.organization
    assert env.api("GET", f"/tasks/{task['id']}").json()["data"]["attributes"]["description"] == "checks things"
    listed = env.api("GET", f"/organizations/{env.organization}/tasks").json()["data"]
    assert [t["id"] for t in listed] == [task["id"]]
    duplicate = env.api(
        "POST", f"/organizations/{env.organization}/tasks",
        {"data": {"type": "tasks", "attributes": {"name": "CHECKS", "url": URL, "category": "task"}}},
    )  # fmt: skip
    assert duplicate.status_code == 422
    for bad, pointer in (
        ({"url": "http://127.0.0.1:9/x"}, "/data/attributes/url"),
        ({"url": "http://169.254.169.254/"}, "/data/attributes/url"),
        ({"url": "ftp://example.com"}, "/data/attributes/url"),
        ({"category": "other"}, "/data/attributes/category"),
        ({"enabled": "yes"}, "/data/attributes/enabled"),
    ):
        response = env.api("PATCH", f"/tasks/{task['id']}", {"data": {"type": "tasks", "attributes": bad}})
        assert response.status_code == 422, (bad, response.text)
        assert response.json()["errors"][0]["source"]["pointer"] == pointer
    renamed = env.api("PATCH", f"/tasks/{task['id']}", {"data": {"type": "tasks", "attributes": {"name": "audit"}}})
    assert renamed.status_code == 200 and renamed.json()["data"]["attributes"]["name"] == "audit"
    create_task(env)  # the old name is free again
    attached = attach(env, task["id"], "advisory")
    assert attached["attributes"]["stages"] == ["post_plan"] and attached["attributes"]["stage"] == "post_plan"
    included = env.api("GET", f"/tasks/{task['id']}?include=workspace_tasks").json()
    assert [i["id"] for i in included["included"]] == [attached["id"]]
    assert env.api("DELETE", f"/tasks/{task['id']}").status_code == 204
    assert env.api("GET", f"/tasks/{task['id']}").status_code == 404
    assert env.api("GET", f"/workspaces/{env.workspace_id}/tasks").json()["data"] == []


def test_attachments_stage_and_stages(env: RunEnv) -> None:
    task = create_task(env)
    attached = attach(env, task["id"], stage="pre_plan")
    assert attached["attributes"]["stages"] == ["pre_plan"]
    again = env.api(
        "POST", f"/workspaces/{env.workspace_id}/tasks",
        {"data": {"type": "workspace-tasks", "attributes": {"enforcement-level": "advisory"},
                  "relationships": {"task": {"data": {"type": "tasks", "id": task["id"]}}}}},
    )  # fmt: skip
    assert again.status_code == 422
    path = f"/workspaces/{env.workspace_id}/tasks/{attached['id']}"
    patch = {"data": {"type": "workspace-tasks", "attributes": {"stages": ["post_plan", "pre_apply"]}}}
    assert env.api("PATCH", path, patch).json()["data"]["attributes"]["stages"] == ["post_plan", "pre_apply"]
    bad = {"data": {"type": "workspace-tasks", "attributes": {"enforcement-level": "strict"}}}
    assert env.api("PATCH", path, bad).status_code == 422
    bad_stage = {"data": {"type": "workspace-tasks", "attributes": {"stage": "post_apply"}}}
    assert env.api("PATCH", path, bad_stage).status_code == 422
    assert env.api("DELETE", path).status_code == 204
    assert env.api("GET", path).status_code == 404


def test_a_passing_mandatory_task_lets_the_run_apply(env: RunEnv) -> None:
    task = create_task(env, **{"hmac-key": "s3cret"})
    attached = attach(env, task["id"], "mandatory")
    run = env.create_run(env.upload_config(), message="ship it")
    stages = env.api("GET", f"/runs/{run['id']}?include=task_stages").json()["included"]
    [stage] = [s for s in stages if s["type"] == "task-stages"]
    assert stage["attributes"]["status"] == "pending"
    read = env.api("GET", f"/task-stages/{stage['id']}?include=task_results").json()
    [result] = read["included"]
    assert result["attributes"]["status"] == "pending" and result["attributes"]["workspace-task-id"] == attached["id"]
    assert result["attributes"]["task-name"] == "checks"
    env.work_next()
    assert status(env, run) == "post_plan_running"
    key = env.container.run_store.load(run["id"]).plan.json_key
    assert key is not None
    env.blobs.put(key, b'{"planned_values": {}}')  # what the runner uploads
    deliver(env)
    payload, headers, body = sent_payload(env)
    assert headers["X-TFC-Task-Signature"] == hmac.new(b"s3cret", body, hashlib.sha512).hexdigest()
    assert payload["payload_version"] == 1 and payload["stage"] == "post_plan" and payload["run_id"] == run["id"]
    assert payload["task_result_enforcement_level"] == "mandatory" and payload["run_message"] == "ship it"
    assert payload["plan_json_api_url"].endswith(f"/api/v2/plans/plan-{run['id'][4:]}/json-output")
    assert payload["workspace_name"] == "app" and payload["organization_name"] == env.organization
    assert payload["vcs_repo_url"] is None and payload["is_speculative"] is False
    assert env.api("GET", f"/task-results/{result['id']}").json()["data"]["attributes"]["status"] == "running"
    # the access token reads this run's plan JSON and configuration, nothing else
    bearer = {"Authorization": f"Bearer {payload['access_token']}"}
    path = payload["plan_json_api_url"].split("/api/v2", 1)[1]
    assert env.client.get(f"/api/v2{path}", headers=bearer, follow_redirects=False).status_code == 307
    download = f"/api/v2/configuration-versions/{payload['configuration_version_id']}/download"
    assert env.client.get(download, headers=bearer, follow_redirects=False).status_code == 302
    for elsewhere in (f"/runs/{run['id']}", f"/workspaces/{env.workspace_id}", f"/task-results/{result['id']}"):
        assert env.client.get(f"/api/v2{elsewhere}", headers=bearer).status_code == 404, elsewhere
    assert callback(env, payload, "passed", url="https://checks.example.com/r/1").status_code == 200
    deliver(env)
    shown = env.api("GET", f"/task-results/{result['id']}").json()["data"]["attributes"]
    assert shown["status"] == "passed" and shown["url"] == "https://checks.example.com/r/1"
    assert status(env, run) == "post_plan_completed"
    # the token died with its result
    assert env.client.get(f"/api/v2{path}", headers=bearer, follow_redirects=False).status_code == 401
    assert env.api("POST", f"/runs/{run['id']}/actions/apply", {}).status_code == 202
    env.work_next()
    assert status(env, run) == "applied"


def test_a_mandatory_failure_errors_the_run_an_advisory_one_does_not(env: RunEnv) -> None:
    mandatory = create_task(env)
    advisory = create_task(env, name="lint", url="https://lint.example.com/")
    attach(env, mandatory["id"], "mandatory")
    attach(env, advisory["id"], "advisory")
    run = env.create_run(env.upload_config())
    env.work_next()
    deliver(env)
    payloads = {json.loads(r.body)["task_result_enforcement_level"]: json.loads(r.body) for r in outbound(env).sent}
    outcomes = {"outcomes": {"data": [{"type": "task-result-outcomes", "attributes": {"outcome-id": "L1",
                "description": "long line", "body": "line 3"}}]}}  # fmt: skip
    wrong = callback(env, payloads["mandatory"], "passed", token=payloads["advisory"]["access_token"])
    assert wrong.status_code == 404  # another result's token
    advised = env.client.patch(
        "/api/v2/task-results/" + payloads["advisory"]["task_result_id"] + "/callback",
        json={"data": {"type": "task-results", "attributes": {"status": "failed"}, "relationships": outcomes}},
        headers={"Authorization": f"Bearer {payloads['advisory']['access_token']}"},
    )
    assert advised.status_code == 200, advised.text
    assert advised.json()["data"]["relationships"]["outcomes"]["data"][0]["attributes"]["outcome-id"] == "L1"
    deliver(env)
    assert status(env, run) == "post_plan_running"  # the mandatory one has not answered
    assert callback(env, payloads["mandatory"], "failed").status_code == 200
    deliver(env)
    document = env.run(run["id"])["attributes"]
    assert document["status"] == "errored" and "post-plan task stage failed" in document["error-message"]


def test_an_advisory_failure_is_reported_and_the_run_goes_on(env: RunEnv) -> None:
    attach(env, create_task(env)["id"], "advisory", stage="pre_plan")
    run = env.create_run(env.upload_config())
    assert status(env, run) == "pre_plan_running"
    deliver(env)
    payload, _, _ = sent_payload(env)
    assert payload["stage"] == "pre_plan" and payload["plan_json_api_url"] is None
    assert callback(env, payload, "failed").status_code == 200
    deliver(env)
    assert status(env, run) == "plan_queued"


def test_bad_callbacks(env: RunEnv) -> None:
    attach(env, create_task(env)["id"], "mandatory", stage="pre_plan")
    env.create_run(env.upload_config())
    deliver(env)
    payload, _, _ = sent_payload(env)
    assert callback(env, payload, "bogus").status_code == 422
    assert callback(env, payload, "passed", token="nope").status_code == 401
    user = env.client.patch(
        local(payload["task_result_callback_url"]),
        json={"data": {"type": "task-results", "attributes": {"status": "passed"}}},
        headers=env.headers,
    )
    assert user.status_code == 404  # only the result's access token may call back
    assert callback(env, payload, "running").status_code == 200
    assert callback(env, payload, "passed").status_code == 200
    assert callback(env, payload, "failed").status_code == 401  # the token died with the final answer


def test_unreachable_services_are_retried_then_error(env: RunEnv) -> None:
    outbound(env).answer = lambda url, body: OutboundResponse(503, "busy")
    attach(env, create_task(env)["id"], "mandatory", stage="pre_plan")
    run = env.create_run(env.upload_config())
    deliver(env)
    assert len(outbound(env).sent) == 4  # the first attempt and three more
    assert status(env, run) == "errored"
    stage = env.api("GET", f"/runs/{run['id']}/task-stages?include=task_results").json()
    [result] = stage["included"]
    assert result["attributes"]["status"] == "errored" and "503" in result["attributes"]["message"]


def test_a_refusal_is_not_retried_and_a_task_that_never_answers_times_out(env: RunEnv) -> None:
    outbound(env).answer = lambda url, body: OutboundResponse(404, "no")
    attach(env, create_task(env)["id"], "advisory", stage="pre_plan")
    run = env.create_run(env.upload_config())
    deliver(env)
    assert len(outbound(env).sent) == 1
    assert status(env, run) == "plan_queued"  # advisory: reported only
    env.work_next()
    silent = create_task(env, name="silent", url="https://silent.example.com/")
    attach(env, silent["id"], "mandatory", stage="pre_plan")
    outbound(env).answer = lambda url, body: OutboundResponse(200, "")
    env.api("POST", f"/runs/{run['id']}/actions/discard", {})
    second = env.create_run(env.upload_config())
    assert status(env, second) == "pre_plan_running"
    deliver(env)
    env.container.task_results.now = lambda: 10**12  # far past the 10-minute limit
    env.container.reaper.reap_once()
    assert status(env, second) == "errored"


def test_task_results_and_stages_of_hidden_runs_are_404(env: RunEnv) -> None:
    attach(env, create_task(env)["id"], "mandatory", stage="pre_plan")
    run = env.create_run(env.upload_config())
    [stage] = env.api("GET", f"/runs/{run['id']}/task-stages").json()["data"]
    result_id = stage["relationships"]["task-results"]["data"][0]["id"]
    other = env.container.accounts.create_user("mallory", "m@example.com")
    bearer = {"Authorization": f"Bearer {env.container.accounts.issue_token(PrincipalKind.USER, other.id).secret}"}
    for path in (f"/task-results/{result_id}", f"/task-stages/{stage['id']}", "/task-results/taskrs-nope"):
        assert env.client.get(f"/api/v2{path}", headers=bearer).status_code == 404
    assert env.client.get(f"/api/v2/organizations/{env.organization}/tasks", headers=bearer).status_code == 404


def test_deleting_the_organization_deletes_its_tasks_attachments_stages_and_results(env: RunEnv) -> None:
    task = create_task(env, **{"hmac-key": "k"})
    attach(env, task["id"], "mandatory", stages=["pre_plan", "post_plan"])
    run = env.create_run(env.upload_config())
    deliver(env)  # a result holds an access token now
    [first, _] = env.api("GET", f"/runs/{run['id']}/task-stages").json()["data"]
    ids = {task["id"], run["id"], first["id"], *[r["id"] for r in first["relationships"]["task-results"]["data"]]}
    items = memory_items(env.container.table)
    assert env.api("DELETE", f"/organizations/{env.organization}").status_code == 204
    left = [item for item in items.values() if any(i in json.dumps(item) for i in ids)]
    assert left == []
    assert [item for item in items.values() if item.get("kind") == "run-task"] == []


def test_a_speculative_run_passes_its_pre_plan_task_and_finishes(env: RunEnv) -> None:
    attach(env, create_task(env)["id"], "mandatory", stages=["pre_plan", "post_plan"])
    run = env.create_run(env.upload_config(speculative=True))
    assert status(env, run) == "pre_plan_running" and env.queued() == []
    deliver(env)
    payload, _, _ = sent_payload(env)
    assert payload["is_speculative"] is True
    assert callback(env, payload, "passed").status_code == 200
    deliver(env)
    (queued,) = env.queued()
    assert queued.lane == "speculative"
    env.work_next()
    assert status(env, run) == "post_plan_running"
    deliver(env)
    payload, _, _ = sent_payload(env)
    assert callback(env, payload, "passed").status_code == 200
    deliver(env)
    assert status(env, run) == "planned_and_finished"
    ws = env.api("GET", f"/workspaces/{env.workspace_id}").json()["data"]
    assert ws["attributes"]["locked"] is False
