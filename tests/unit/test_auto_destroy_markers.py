"""The auto-destroy markers over each table (memory, SQLite, DynamoDB on moto): the sweep's query finds only the
workspaces whose next look has come, earliest first; a workspace without auto-destroy has no marker; the reminders
sent move the next look to the next reminder, then to the due time; a stale copy of a marker cannot record them."""

from __future__ import annotations

import dataclasses

from terrace.adapters.table import Table
from terrace.domain.workspace import Workspace
from terrace.services.workspaces.store_auto_destroy import AutoDestroyMarkers

WS = Workspace(id="ws-a", name="a", organization="org-1", created_at="x", updated_at="x", version=1)


def test_the_due_query_is_sparse_ordered_and_advances(table: Table) -> None:
    markers = AutoDestroyMarkers(table)
    markers.sync(WS)  # not ephemeral: nothing written
    assert markers.due("2100-01-01T00:00:00.000Z") == []
    markers.sync(dataclasses.replace(WS, id="ws-b", auto_destroy_at="2030-01-03T00:00:00.000Z"))
    markers.sync(dataclasses.replace(WS, auto_destroy_at="2030-01-02T00:00:00.000Z"))
    assert markers.due("2029-12-31T23:59:59.000Z") == []  # the 24-hour reminder of ws-a is a second later
    [first] = markers.due("2030-01-01T00:00:01.000Z")
    assert first["workspace_id"] == "ws-a"
    assert [m["workspace_id"] for m in markers.due("2030-01-02T00:00:00.000Z")] == ["ws-a", "ws-b"]
    assert markers.advance(first, (24,)) is True
    assert markers.advance(first, (24,)) is False  # a stale copy
    assert [m["workspace_id"] for m in markers.due("2030-01-01T11:59:59.000Z")] == []  # next: 12 hours before
    assert [m["workspace_id"] for m in markers.due("2030-01-01T12:00:00.000Z")] == ["ws-a"]
    markers.sync(dataclasses.replace(WS, auto_destroy_at=None))
    assert [m["workspace_id"] for m in markers.due("2100-01-01T00:00:00.000Z")] == ["ws-b"]
