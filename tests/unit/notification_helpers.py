"""A memory stack for notification tests: the events queue is a `MemoryEventQueue` (delays honoured) and `pump`
plays the events worker: run transitions the run store published, then every delivery event due."""

from __future__ import annotations

from typing import Any

from run_helpers import RunEnv, make_run_env
from terrace.adapters.memory_events import MemoryEventPublisher, MemoryEventQueue
from terrace.adapters.memory_outbound import MemoryOutbound


def notification_env(**settings: Any) -> RunEnv:
    env = make_run_env(**{"notification_retry_base_s": 0, **settings})
    env.container.event_queue = MemoryEventQueue()
    return env


def outbound(env: RunEnv) -> MemoryOutbound:
    assert isinstance(env.container.outbound, MemoryOutbound)
    return env.container.outbound


def pump(env: RunEnv, rounds: int = 20) -> int:
    """Hand every published run event, then every delivery event now due, to the events service; returns how
    many delivery events were handled."""
    publisher = env.container.publisher
    queue = env.container.event_queue
    assert isinstance(publisher, MemoryEventPublisher) and isinstance(queue, MemoryEventQueue)
    handled = 0
    for _ in range(rounds):
        published, publisher.events[:] = list(publisher.events), []
        for event in published:
            env.container.events.handle(event)
        received = queue.receive(10)
        for event in received:
            env.container.events.handle(event.body)
            queue.ack(event.receipt)
            handled += 1
        if not published and not received:
            break
    return handled


def body(name: str = "hooks", **attributes: Any) -> dict[str, Any]:
    attrs = {"name": name, "destination-type": "generic", "enabled": False, "url": "https://hooks.example/x"}
    return {"data": {"type": "notification-configurations", "attributes": {**attrs, **attributes}}}


def create(env: RunEnv, **attributes: Any) -> dict[str, Any]:
    response = env.api("POST", f"/workspaces/{env.workspace_id}/notification-configurations", body(**attributes))
    assert response.status_code == 201, response.text
    return dict(response.json()["data"])
