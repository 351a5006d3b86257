"""A plan export's request and a HYOK configuration's key test request are staged in the outbox with the write that
asks for them (`services/outbox_relay.py`), as a run's events are: when the publish right after the write fails,
the export stays `queued` and the configuration `untested` only until the reaper's outbox sweep publishes the
request, and then the export is written and the key tested."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from run_helpers import RunEnv, make_run_env
from terrace.adapters.memory_key_wrapper import MemoryKeyWrapper
from terrace.services.hyok.key_test import EVENT as KEY_TEST
from terrace.services.runs.plan_exports import EVENT as EXPORT
from test_hyok import KEK, _aws_oidc, _hyok, _pool, _pump
from test_plan_exports import export_body, finished_plan

NEXT_KEK = "arn:aws:kms:us-east-1:123456789012:key/next-key"


class _Down(Exception):
    pass


@contextmanager
def _publishing_fails(env: RunEnv) -> Iterator[None]:
    """Every publish inside the block raises (the events queue was unreachable)."""
    publisher: Any = env.container.publisher
    publish = publisher.publish

    def refused(event: dict[str, Any]) -> None:
        raise _Down(event.get("type"))

    publisher.publish = refused
    try:
        yield
    finally:
        publisher.publish = publish


def _staged(env: RunEnv) -> list[dict[str, Any]]:
    return [entry.event for entry in env.container.outbox_relay.outbox.pending()]


def _status(env: RunEnv, path: str) -> str:
    return str(env.api("GET", path).json()["data"]["attributes"]["status"])


def _swept(env: RunEnv, event_type: str) -> list[dict[str, Any]]:
    """The reaper's tick after the outbox's grace; the events of `event_type` it published, handed to the events
    worker (the memory publisher only records them)."""
    outbox: Any = env.container.outbox_relay.outbox
    now_ms = outbox._now_ms
    outbox._now_ms = lambda: now_ms() + 6_000  # the grace (5 s) has passed
    publisher: Any = env.container.publisher
    before = len(publisher.events)
    try:
        env.container.reaper.reap_once()
    finally:
        outbox._now_ms = now_ms
    published = [e for e in publisher.events[before:] if e.get("type") == event_type]
    for event in published:
        env.container.events.handle(event)
    return published


def test_a_plan_export_whose_request_was_not_published_is_written_after_the_sweep() -> None:
    env = make_run_env()
    _, plan_id = finished_plan(env)
    with _publishing_fails(env):
        created = env.api("POST", "/plan-exports", export_body(plan_id))
    assert created.status_code == 201, created.text
    export_id = created.json()["data"]["id"]
    assert _staged(env) == [{"type": EXPORT, "plan_export": export_id}]
    assert _status(env, f"/plan-exports/{export_id}") == "queued"
    assert [e["plan_export"] for e in _swept(env, EXPORT)] == [export_id]
    assert _status(env, f"/plan-exports/{export_id}") == "finished"
    assert _staged(env) == []


def _hyok_env() -> RunEnv:
    env = make_run_env()
    wrapper = env.container.key_wrapper
    assert isinstance(wrapper, MemoryKeyWrapper)
    wrapper.add(KEK)
    wrapper.add(NEXT_KEK)
    return env


def test_a_key_test_whose_request_was_not_published_runs_after_the_sweep() -> None:
    env = _hyok_env()
    oidc, pool = _aws_oidc(env), _pool(env)
    with _publishing_fails(env):
        created = _hyok(env, oidc, pool, "lost-publish")
    assert created.status_code == 201, created.text
    hyok_id = created.json()["data"]["id"]
    assert _staged(env) == [{"type": KEY_TEST, "hyok_configuration": hyok_id}]
    assert _status(env, f"/hyok-configurations/{hyok_id}") == "untested"
    assert [e["hyok_configuration"] for e in _swept(env, KEY_TEST)] == [hyok_id]
    assert _status(env, f"/hyok-configurations/{hyok_id}") == "available"
    assert _staged(env) == []


def test_a_changed_key_s_new_test_is_staged_with_the_change() -> None:
    env = _hyok_env()
    oidc, pool = _aws_oidc(env), _pool(env)
    hyok_id = _hyok(env, oidc, pool, "rekeyed").json()["data"]["id"]
    _pump(env)
    assert _status(env, f"/hyok-configurations/{hyok_id}") == "available"
    body = {"data": {"type": "hyok-configurations", "attributes": {"kek-id": NEXT_KEK}}}
    with _publishing_fails(env):
        changed = env.api("PATCH", f"/hyok-configurations/{hyok_id}", body)
    assert changed.status_code == 200, changed.text
    assert changed.json()["data"]["attributes"]["status"] == "untested"
    assert _staged(env) == [{"type": KEY_TEST, "hyok_configuration": hyok_id}]
    assert [e["hyok_configuration"] for e in _swept(env, KEY_TEST)] == [hyok_id]
    assert _status(env, f"/hyok-configurations/{hyok_id}") == "available"
