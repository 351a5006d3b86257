"""The events worker of the embedded server reads the SQLite events queue through the EventQueue port: handled
events are acknowledged, a failing one comes back after its visibility timeout and ends in the dead letters."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from terrace.adapters.sqlite_events import SqliteEventQueue
from terrace.adapters.sqlite_table import SqliteDatabase
from terrace.local import workers
from terrace.services.events import EventService


def wait_for(probe: Any, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not probe():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_the_events_worker_acknowledges_handled_events_and_redrives_failing_ones(tmp_path: Path) -> None:
    database = SqliteDatabase(tmp_path / "terrace.db")
    # 1 s, not 0: the worker handles events concurrently, and a 0 s visibility would hand an event out again
    # while its handler still runs (as SQS does after a visibility timeout)
    queue = SqliteEventQueue(database, visibility_s=1, max_receives=3)
    handled: list[dict[str, Any]] = []
    attempts: list[int] = []
    events = EventService()
    events.subscribe("ok", handled.append)

    def failing(event: dict[str, Any]) -> None:
        attempts.append(1)
        raise RuntimeError("handler failed")

    events.subscribe("poison", failing)
    stack = SimpleNamespace(container=SimpleNamespace(event_queue=queue, events=events), stopping=threading.Event())
    thread = threading.Thread(target=workers.events, args=(stack,))
    thread.start()
    try:
        queue.publish({"type": "ok", "n": 1})
        queue.publish({"type": "poison"})
        wait_for(lambda: handled == [{"type": "ok", "n": 1}])
        wait_for(lambda: queue.dead_letters() == [{"type": "poison"}])
    finally:
        stack.stopping.set()
        thread.join(10)
    assert not thread.is_alive()
    assert len(attempts) == 3  # delivered max_receives times, then moved aside
    assert queue.receive(10) == []  # the handled event was acknowledged
    database.close()


def test_a_restarted_server_handles_at_once_the_events_a_killed_one_was_handling(tmp_path: Path) -> None:
    """SIGKILL mid-batch: the events the dead worker had received come back at the next start, not a visibility
    timeout later; an event published with a delay keeps its delay (issue 30's kill proof)."""
    from terrace.local import embedded

    database = SqliteDatabase(tmp_path / "terrace.db")
    dead = SqliteEventQueue(database, visibility_s=60)
    dead.publish({"type": "taken"})
    dead.publish({"type": "later"}, delay_s=60)
    assert [e.body["type"] for e in dead.receive(10)] == ["taken"]  # then the process dies: no ack

    restarted = SqliteEventQueue(database, visibility_s=60)
    assert restarted.receive(10) == []
    assert embedded.resume_events(SimpleNamespace(event_queue=restarted)) == 1  # type: ignore[arg-type]

    again = restarted.receive(10)
    assert [e.body["type"] for e in again] == ["taken"]
    restarted.ack(again[0].receipt)
    assert restarted.receive(10) == []  # the delayed one waits its time
