"""Audit events stored on each table (memory, SQLite, DynamoDB on moto): appended once (an id written twice is
refused), read back oldest first across day partitions within a window, expiring after the retention, and
`delete_all_of` takes one organization's events and nothing of another's."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from implementations import IMPLEMENTATIONS, open_table
from terrace.adapters.table import ConditionFailed
from terrace.domain.audit import Actor, AuditEvent
from terrace.services.audit.store import DAY_S, AuditStore

DAY_US = DAY_S * 1_000_000
T0 = 1_780_000_000 * 1_000_000  # 2026-05-28, µs


@pytest.fixture(params=IMPLEMENTATIONS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[AuditStore]:
    with open_table(request.param, tmp_path, lambda: str(request.getfixturevalue("moto_endpoint"))) as table:
        yield AuditStore(table, retention_days=30)


def _event(event_id: str, epoch_us: int, organization: str = "acme") -> AuditEvent:
    return AuditEvent(
        id=event_id,
        timestamp=f"t{epoch_us}",
        epoch_us=epoch_us,
        organization=organization,
        actor=Actor("user", "user-a", "alice", "at-1"),
        source="192.0.2.1",
        action="workspace.update",
        resource_type="workspace",
        resource_id="ws-1",
        outcome=200,
        meta={"route": "PATCH /api/v2/workspaces/{workspace_id}"},
    )


def test_events_read_back_in_order_across_days_within_the_window(store: AuditStore) -> None:
    for event_id, at in (("ae-3", T0 + DAY_US + 5), ("ae-1", T0), ("ae-2", T0 + 1), ("ae-4", T0 + 3 * DAY_US)):
        store.append(_event(event_id, at))
    store.append(_event("ae-other", T0 + 2, organization="other"))
    read = list(store.between("acme", T0, T0 + 2 * DAY_US, 100))
    assert [e.id for e in read] == ["ae-1", "ae-2", "ae-3"]
    assert read[0] == _event("ae-1", T0)
    assert [e.id for e in store.between("acme", T0 + 1, T0 + 4 * DAY_US, 2)] == ["ae-2", "ae-3"]


def test_an_event_is_appended_once(store: AuditStore) -> None:
    store.append(_event("ae-1", T0))
    with pytest.raises(ConditionFailed):
        store.append(_event("ae-1", T0))


def test_delete_all_of_takes_one_organizations_events(store: AuditStore) -> None:
    store.append(_event("ae-1", T0))
    store.append(_event("ae-2", T0 + 2 * DAY_US))
    store.append(_event("ae-3", T0, organization="other"))
    store.delete_all_of("acme")
    assert list(store.between("acme", T0 - DAY_US, T0 + 3 * DAY_US, 100)) == []
    assert [e.id for e in store.between("other", T0, T0 + 1, 100)] == ["ae-3"]
