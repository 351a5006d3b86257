"""Notification configurations stored on each table (memory, SQLite, DynamoDB on moto): listed per subscribable
oldest first, replaced only from the version read, the last responses bounded, each delivery attempt recorded
once (a redelivered event's second record is refused), a deletion takes the attempts with it, and
`delete_all_of` takes every configuration of one workspace or team and nothing of another's."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from implementations import IMPLEMENTATIONS, open_table
from terrace.adapters.table import ConditionFailed
from terrace.domain.errors import Conflict
from terrace.domain.notifications import RESPONSES_KEPT, NotificationConfiguration
from terrace.services.notifications.store import NotificationStore


@pytest.fixture(params=IMPLEMENTATIONS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[NotificationStore]:
    with open_table(request.param, tmp_path, lambda: str(request.getfixturevalue("moto_endpoint"))) as table:
        yield NotificationStore(table)


def _nc(nc_id: str, created_at: str, subscribable: str = "ws-abc") -> NotificationConfiguration:
    return NotificationConfiguration(
        id=nc_id,
        subscribable_type="workspaces",
        subscribable_id=subscribable,
        organization="acme",
        name=f"n-{nc_id}",
        destination_type="generic",
        enabled=True,
        url="https://hooks.example/x",
        triggers=["run:created"],
        created_at=created_at,
        updated_at=created_at,
        token_ciphertext="opaque",
    )


def _response(n: int) -> dict[str, object]:
    return {"url": "u", "body": f"b{n}", "code": 200, "headers": {"A": ["1"]}, "sent-at": "t", "successful": True}


def test_listed_per_subscribable_oldest_first_and_read_back_whole(store: NotificationStore) -> None:
    store.create(_nc("nc-2", "2026-01-02T00:00:00Z"))
    store.create(_nc("nc-1", "2026-01-01T00:00:00Z"))
    store.create(_nc("nc-3", "2026-01-01T00:00:00Z", subscribable="team-x"))
    assert [nc.id for nc in store.of("ws-abc")] == ["nc-1", "nc-2"]
    assert store.load("nc-1") == _nc("nc-1", "2026-01-01T00:00:00Z")
    assert store.find("nc-nothere") is None and store.find("not-an-id") is None
    with pytest.raises(ConditionFailed):
        store.create(_nc("nc-1", "2026-01-01T00:00:00Z"))


def test_replace_needs_the_version_read(store: NotificationStore) -> None:
    store.create(_nc("nc-1", "2026-01-01T00:00:00Z"))
    first, second = store.load("nc-1"), store.load("nc-1")
    first.name = "first"
    store.replace(first, 1)
    second.name = "second"
    with pytest.raises(Conflict, match="changed concurrently"):  # the domain's 409, not the table's error
        store.replace(second, 1)
    assert store.load("nc-1").name == "first" and store.load("nc-1").version == 2


def test_each_attempt_is_recorded_once_and_responses_are_bounded(store: NotificationStore) -> None:
    store.create(_nc("nc-1", "2026-01-01T00:00:00Z"))
    assert store.record("nc-1", _response(0), ("run-1:pending:t", 1)) is not None
    assert store.record("nc-1", _response(0), ("run-1:pending:t", 1)) is None  # the same attempt again
    assert store.attempt("nc-1", "run-1:pending:t", 1) is not None
    assert store.attempt("nc-1", "run-1:pending:t", 2) is None
    for n in range(1, RESPONSES_KEPT + 3):
        store.record("nc-1", _response(n))
    kept = store.load("nc-1").delivery_responses
    assert (
        len(kept) == RESPONSES_KEPT
        and kept[-1]["body"] == f"b{RESPONSES_KEPT + 2}"
        and kept[0]["headers"] == {"A": ["1"]}
    )
    assert store.record("nc-gone", _response(0)) is None


def test_delete_takes_the_attempts(store: NotificationStore) -> None:
    store.create(_nc("nc-1", "2026-01-01T00:00:00Z"))
    store.record("nc-1", _response(0), ("d", 1))
    store.delete(store.load("nc-1"))
    assert store.find("nc-1") is None and store.attempt("nc-1", "d", 1) is None and store.of("ws-abc") == []


def test_delete_all_of_a_workspace_or_a_team(store: NotificationStore) -> None:
    store.create(_nc("nc-1", "2026-01-01T00:00:00Z"))
    store.create(_nc("nc-2", "2026-01-02T00:00:00Z"))
    store.create(_nc("nc-3", "2026-01-01T00:00:00Z", subscribable="ws-other"))
    store.create(_nc("nc-4", "2026-01-01T00:00:00Z", subscribable="team-x"))
    store.record("nc-2", _response(0), ("d", 1))
    store.delete_all_of(workspace="ws-abc")
    assert store.of("ws-abc") == [] and store.find("nc-2") is None and store.attempt("nc-2", "d", 1) is None
    assert [nc.id for nc in store.of("ws-other")] == ["nc-3"] and [nc.id for nc in store.of("team-x")] == ["nc-4"]
    store.delete_all_of(team="team-x")
    assert store.of("team-x") == [] and [nc.id for nc in store.of("ws-other")] == ["nc-3"]
    with pytest.raises(ValueError):
        store.delete_all_of()
