"""Delivery of run notifications on memory adapters: a run's transitions reach the events service, which
publishes one delivery event per configuration and trigger; the events worker (`pump`) sends them, signed, and
keeps the answers. Failures are retried up to 5 attempts in all, a redelivered event sends and records nothing
twice, and nothing is sent on the request path of the run."""

from __future__ import annotations

import hashlib
import hmac
import json
from typing import Any

from notification_helpers import body, create, notification_env, outbound, pump
from run_helpers import RunEnv
from terrace.adapters.memory_events import MemoryEventQueue
from terrace.adapters.outbound import OutboundResponse
from terrace.services.notifications.delivery import DELIVERY, MAX_ATTEMPTS

ALL = ["run:created", "run:planning", "run:needs_attention", "run:applying", "run:completed", "run:errored"]


def _enabled(env: RunEnv, **attributes: Any) -> dict[str, Any]:
    nc = create(env, **{"enabled": True, "token": "hook-secret", "triggers": ALL, **attributes})
    outbound(env).sent.clear()  # the verification enabling it sent
    return nc


def _bodies(env: RunEnv) -> list[dict[str, Any]]:
    return [json.loads(request.body) for request in outbound(env).sent]


def test_a_run_notifies_each_trigger_once_signed_and_off_the_request_path() -> None:
    env = notification_env()
    nc = _enabled(env)
    run = env.create_run(env.upload_config())
    assert outbound(env).sent == []  # creating the run sent nothing: delivery is the events worker's
    pump(env)
    env.work_next()  # plan: planning, then planned (awaiting confirmation)
    pump(env)
    assert env.api("POST", f"/runs/{run['id']}/actions/apply", {}).status_code == 202
    env.work_next()  # apply: applying, then applied
    pump(env)
    bodies = _bodies(env)
    assert [(b["notifications"][0]["trigger"], b["notifications"][0]["run_status"]) for b in bodies] == [
        ("run:created", "pending"),
        ("run:planning", "planning"),
        ("run:needs_attention", "cost_estimated"),  # cost estimation is on by default
        ("run:applying", "applying"),
        ("run:completed", "applied"),
    ]
    first = bodies[0]
    assert first["payload_version"] == 1 and first["notification_configuration_id"] == nc["id"]
    assert first["run_id"] == run["id"] and first["workspace_name"] == "app" and first["organization_name"] == "acme"
    assert first["run_created_by"] == "alice" and first["run_url"].endswith(
        f"/app/acme/workspaces/app/runs/{run['id']}"
    )
    for request in outbound(env).sent:
        expected = hmac.new(b"hook-secret", request.body, hashlib.sha512).hexdigest()
        assert request.headers["X-TFE-Notification-Signature"] == expected
    kept = env.api("GET", f"/notification-configurations/{nc['id']}").json()["data"]["attributes"]
    assert [r["successful"] for r in kept["delivery-responses"]] == [True] * 6  # 5 deliveries and the verification


def test_only_the_chosen_triggers_of_enabled_configurations() -> None:
    env = notification_env()
    _enabled(env, triggers=["run:completed"])
    create(env, name="off", triggers=ALL)  # disabled
    env.create_run(env.upload_config(), **{"auto-apply": True})
    env.work_next()
    env.work_next()
    pump(env)
    assert [b["notifications"][0]["trigger"] for b in _bodies(env)] == ["run:completed"]


def test_failures_are_retried_until_an_answer_and_each_attempt_is_kept() -> None:
    env = notification_env()
    nc = _enabled(env, triggers=["run:created"])
    answers = iter([OutboundResponse(500, "down"), OutboundResponse(None, error="timeout"), OutboundResponse(204)])
    outbound(env).answer = lambda url, data: next(answers)
    env.create_run(env.upload_config())
    assert pump(env) == 3
    assert len(outbound(env).sent) == 3 and len({r.body for r in outbound(env).sent}) == 1  # the same bytes
    responses = env.api("GET", f"/notification-configurations/{nc['id']}").json()["data"]["attributes"][
        "delivery-responses"
    ]
    assert [(r["code"], r["successful"]) for r in responses[:3]] == [(204, True), (None, False), (500, False)]
    assert responses[1]["body"] == "timeout"


def test_a_dead_receiver_gets_five_attempts_and_the_run_goes_on() -> None:
    env = notification_env(notification_retry_base_s=7)
    _enabled(env, triggers=["run:created", "run:completed"])
    outbound(env).answer = lambda url, data: OutboundResponse(None, error="connection: refused")
    queue = env.container.event_queue
    assert isinstance(queue, MemoryEventQueue)
    now = [1000.0]
    queue._now = lambda: now[0]
    run = env.create_run(env.upload_config(), **{"auto-apply": True})
    env.work_next()
    env.work_next()
    assert env.run(run["id"])["attributes"]["status"] == "applied"  # the run never waited for the receiver
    delays = []
    for _ in range(10):
        pump(env)
        pending = [e for e in queue.events if e["type"] == DELIVERY]
        if not pending:
            break
        delays.append(sorted({e["attempt"] for e in pending}))
        now[0] += 7 * 2**8
    assert len(outbound(env).sent) == 2 * MAX_ATTEMPTS
    assert delays[0] == [2]


def test_a_redelivered_event_sends_and_records_nothing_twice() -> None:
    env = notification_env()
    nc = _enabled(env, triggers=["run:created"])
    env.create_run(env.upload_config())
    publisher_events = list(env.container.publisher.events)  # type: ignore[attr-defined]
    for event in publisher_events:
        env.container.events.handle(event)
    env.container.publisher.events.clear()  # type: ignore[attr-defined]
    queue = env.container.event_queue
    assert isinstance(queue, MemoryEventQueue)
    [delivery] = queue.receive(10)
    env.container.events.handle(delivery.body)
    env.container.events.handle(delivery.body)  # SQS delivered it again
    assert len(outbound(env).sent) == 1
    responses = env.container.notification_store.load(nc["id"]).delivery_responses
    assert len(responses) == 2  # the verification and this one attempt


def test_deleted_or_disabled_configurations_deliver_nothing() -> None:
    env = notification_env()
    nc = _enabled(env, triggers=["run:created"])
    env.create_run(env.upload_config())
    disable = {"data": {"type": "notification-configurations", "attributes": {"enabled": False}}}
    env.api("PATCH", f"/notification-configurations/{nc['id']}", disable)
    pump(env)
    assert outbound(env).sent == []


def test_a_project_configuration_hears_the_runs_of_its_workspaces() -> None:
    """A project's notification configurations (go-tfe v1.109's `TestNotificationConfiguration*_forProjects`): managed
    through `/projects/:id/notification-configurations`, delivered for runs of every workspace in the project, and
    deleted with the project."""
    env = notification_env()
    ws = env.api("GET", f"/workspaces/{env.workspace_id}").json()["data"]
    project_id = ws["relationships"]["project"]["data"]["id"]
    attrs = {"enabled": True, "triggers": ["run:created"], "url": "https://hooks.example/project"}
    created = env.api("POST", f"/projects/{project_id}/notification-configurations", body("proj", **attrs))
    assert created.status_code == 201, created.text
    nc = created.json()["data"]
    assert nc["relationships"]["subscribable"]["data"] == {"type": "projects", "id": project_id}
    listed = env.api("GET", f"/projects/{project_id}/notification-configurations").json()["data"]
    assert [c["id"] for c in listed] == [nc["id"]]
    assert env.api("GET", "/projects/prj-nonexisting/notification-configurations").status_code == 404
    outbound(env).sent.clear()  # the verification enabling it sent
    env.create_run(env.upload_config())
    pump(env)
    (sent,) = _bodies(env)
    assert sent["notification_configuration_id"] == nc["id"] and sent["workspace_name"] == "app"

    other = env.api(
        "POST", "/organizations/acme/projects", {"data": {"type": "projects", "attributes": {"name": "second"}}}
    )
    other_id = other.json()["data"]["id"]
    made = env.api(
        "POST", f"/projects/{other_id}/notification-configurations", body("p2", url="https://hooks.example/2")
    )
    assert made.status_code == 201, made.text
    assert env.api("DELETE", f"/projects/{other_id}").status_code == 204
    assert env.api("GET", f"/notification-configurations/{made.json()['data']['id']}").status_code == 404


def test_a_run_waiting_for_a_policy_override_needs_attention() -> None:
    from test_task_stages import Scripted, progressed

    env = notification_env()
    _enabled(env, triggers=["run:needs_attention"])
    checks = Scripted(kind="policy-evaluations", stages={"post_plan"})
    env.take_part(checks)
    run = env.create_run(env.upload_config())
    env.work_next()  # planned: its post-plan stage runs (nobody is asked yet)
    pump(env)
    assert _bodies(env) == []
    checks.verdicts["post_plan"] = "awaiting_override"  # a mandatory policy failed
    progressed(env, run, "post_plan")
    pump(env)
    [override] = [b["notifications"][0] for b in _bodies(env)]
    assert (override["trigger"], override["run_status"]) == ("run:needs_attention", "post_plan_awaiting_decision")
    [stage] = env.api("GET", f"/runs/{run['id']}/task-stages").json()["data"]
    assert env.api("POST", f"/task-stages/{stage['id']}/actions/override", {}).status_code == 200
    pump(env)  # overridden: now it waits for a confirmation
    assert [b["notifications"][0]["run_status"] for b in _bodies(env)][1:] == ["post_plan_completed"]
