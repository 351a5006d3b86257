"""A run transition's event outlives a kill between the transition's commit and the event's publish (issue 30).

The event is staged in the transition's own transaction (`adapters/outbox.py`); the relay publishes it right after
the commit and removes it. A process killed in between never ran the relay: the entry stays in the table, and the
reaper's outbox sweep publishes it once it is older than the grace (`services/outbox_relay.py`)."""

from __future__ import annotations

from typing import Any

from run_helpers import make_run_env
from terrace.adapters.memory_events import MemoryEventPublisher
from terrace.domain import clock


def _changes(publisher: MemoryEventPublisher, run_id: str) -> list[dict[str, Any]]:
    return [e for e in publisher.events if e["type"] == "run.status_changed" and e["run_id"] == run_id]


def test_a_transition_publishes_its_event_once_and_leaves_nothing_staged() -> None:
    env = make_run_env()
    publisher = env.container.publisher
    assert isinstance(publisher, MemoryEventPublisher)
    run = env.create_run(env.upload_config())
    changes = _changes(publisher, run["id"])
    assert changes and changes[-1]["to"] == "plan_queued"
    assert env.container.outbox_relay.outbox.pending() == []
    env.container.reaper.reap_once()
    assert _changes(publisher, run["id"]) == changes  # the sweep found nothing to publish again


def test_an_event_whose_publish_a_kill_cut_off_is_published_by_the_reapers_sweep() -> None:
    env = make_run_env()
    publisher = env.container.publisher
    assert isinstance(publisher, MemoryEventPublisher)
    relay = env.container.outbox_relay
    delivered = relay.deliver
    relay.deliver = lambda entries: 0  # type: ignore[method-assign]  # the process died right after the commit
    run = env.create_run(env.upload_config())
    relay.deliver = delivered  # type: ignore[method-assign]  # the restarted process
    assert _changes(publisher, run["id"]) == []
    staged = [entry.event for entry in relay.outbox.pending()]
    assert [e["run_id"] for e in staged] == [run["id"]] * len(staged) and staged[-1]["to"] == "plan_queued"

    env.container.reaper.reap_once()
    assert _changes(publisher, run["id"]) == []  # within the grace: a live committer may be publishing it
    outbox: Any = relay.outbox
    outbox._now_ms = lambda: int(clock.epoch() * 1000) + 6_000  # the grace (5 s) has passed
    env.container.reaper.reap_once()
    assert _changes(publisher, run["id"]) == staged  # every event, in the order of the transitions
    assert relay.outbox.pending() == []
    env.container.reaper.reap_once()
    assert _changes(publisher, run["id"]) == staged


def test_a_policy_evaluation_queued_by_a_process_that_died_after_its_write_still_runs() -> None:
    from policy_helpers import create_policy, create_set, deliver, plan_run

    env = make_run_env()
    create_set(env, "guard", policies=(create_policy(env, "no_null"),), workspaces=(env.workspace_id,))
    relay = env.container.outbox_relay
    delivered = relay.deliver
    relay.deliver = lambda entries: 0  # type: ignore[method-assign]  # every publish after a commit cut off
    run = plan_run(env, "null_resource", handle=False)
    relay.deliver = delivered  # type: ignore[method-assign]
    staged = [entry.event["type"] for entry in relay.outbox.pending()]
    assert "policy_evaluation.queued" in staged, staged
    deliver(env)
    assert env.run(run["id"])["attributes"]["status"] == "post_plan_running"  # nothing was published: it waits
    outbox: Any = relay.outbox
    outbox._now_ms = lambda: int(clock.epoch() * 1000) + 6_000
    env.container.reaper.reap_once()
    deliver(env)  # the events worker: the evaluation runs, the stage concludes
    assert env.run(run["id"])["attributes"]["status"] == "errored"  # the mandatory set failed, as without a kill
    assert relay.outbox.pending() == []


def test_a_run_tasks_first_request_queued_by_a_process_that_died_after_its_write_is_still_sent() -> None:
    from policy_helpers import deliver
    from terrace.adapters.memory_outbound import MemoryOutbound

    env = make_run_env()
    body = {"data": {"type": "tasks", "attributes": {"name": "checks", "url": "https://checks.example.com/hook",
                                                      "category": "task"}}}  # fmt: skip
    task = env.api("POST", f"/organizations/{env.organization}/tasks", body).json()["data"]
    attach = {"data": {"type": "workspace-tasks", "attributes": {"enforcement-level": "mandatory"},
                       "relationships": {"task": {"data": {"type": "tasks", "id": task["id"]}}}}}  # fmt: skip
    assert env.api("POST", f"/workspaces/{env.workspace_id}/tasks", attach).status_code == 201
    run = env.create_run(env.upload_config())
    relay = env.container.outbox_relay
    delivered = relay.deliver
    relay.deliver = lambda entries: 0  # type: ignore[method-assign]  # every publish after a commit cut off
    env.work_next()
    relay.deliver = delivered  # type: ignore[method-assign]
    assert "run_task.deliver" in [entry.event["type"] for entry in relay.outbox.pending()]
    sent = env.container.outbound
    assert isinstance(sent, MemoryOutbound)
    deliver(env)
    assert sent.sent == [] and env.run(run["id"])["attributes"]["status"] == "post_plan_running"
    outbox: Any = relay.outbox
    outbox._now_ms = lambda: int(clock.epoch() * 1000) + 6_000
    env.container.reaper.reap_once()
    deliver(env)
    assert [request.url for request in sent.sent] == ["https://checks.example.com/hook"]
    assert relay.outbox.pending() == []
