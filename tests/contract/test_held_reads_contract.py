"""What a `held_reads()` scope adds to the table contract (`adapters/held_reads.py`, the mechanism of the stores'
unit of work), over memory, SQLite and moto: a read repeated inside a scope is answered from the first, even
when another request wrote since; the scope's own writes are seen by its later reads (gets, batch gets, queries
of the base table and of the index); a write that fails inside the scope leaves what is held consistent with the
table, so the caller's re-read decides on what is stored; a scope's end forgets everything."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from implementations import IMPLEMENTATIONS, open_table
from terrace.adapters.held_reads import HeldReadsTable, held_reads
from terrace.adapters.table import Check, ConditionFailed, Delete, Put, Table
from terrace.domain.errors import TooLarge
from terrace.domain.limits import ITEM_MAX_BYTES


@pytest.fixture(params=IMPLEMENTATIONS)
def tables(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[HeldReadsTable, Table]]:
    """The held table and the one it wraps (written directly: another request's writes)."""
    with open_table(request.param, tmp_path, lambda: str(request.getfixturevalue("moto_endpoint"))) as inner:
        yield HeldReadsTable(inner), inner


def test_reads_are_held_until_the_scope_ends(tables: tuple[HeldReadsTable, Table]) -> None:
    table, other = tables
    table.put({"pk": "ws", "sk": "ws", "version": 1})
    table.put({"pk": "ws", "sk": "run#1", "gsi1pk": "org#runs", "gsi1sk": "1"})
    with held_reads():
        assert table.get("ws", "ws") == {"pk": "ws", "sk": "ws", "version": 1}
        assert [i["sk"] for i in table.query("ws")] == ["run#1", "ws"]
        assert [i["sk"] for i in table.query("org#runs", index="gsi1")] == ["run#1"]
        assert table.batch_get([("ws", "ws"), ("gone", "x")]) == [{"pk": "ws", "sk": "ws", "version": 1}]
        other.put({"pk": "ws", "sk": "ws", "version": 2})
        other.put({"pk": "ws", "sk": "run#2", "gsi1pk": "org#runs", "gsi1sk": "2"})
        other.put({"pk": "gone", "sk": "x"})
        assert table.get("ws", "ws") == {"pk": "ws", "sk": "ws", "version": 1}
        assert [i["sk"] for i in table.query("ws")] == ["run#1", "ws"]
        assert [i["sk"] for i in table.query("org#runs", index="gsi1")] == ["run#1"]
        assert table.batch_get([("ws", "ws"), ("gone", "x")]) == [{"pk": "ws", "sk": "ws", "version": 1}]
        held = table.get("ws", "ws")
        assert held is not None
        held["version"] = 99  # what a read returns is the caller's: changing it changes nothing held
        assert table.get("ws", "ws") == {"pk": "ws", "sk": "ws", "version": 1}
    assert table.get("ws", "ws") == {"pk": "ws", "sk": "ws", "version": 2}
    assert [i["sk"] for i in table.query("ws")] == ["run#1", "run#2", "ws"]
    assert table.get("gone", "x") == {"pk": "gone", "sk": "x"}


def test_the_scopes_own_writes_are_seen_by_its_later_reads(tables: tuple[HeldReadsTable, Table]) -> None:
    table, _ = tables
    table.put({"pk": "ws", "sk": "ws", "version": 1})
    with held_reads():
        assert table.get("ws", "run#1") is None and [i["sk"] for i in table.query("ws")] == ["ws"]
        assert table.query("org#runs", index="gsi1") == []
        table.put({"pk": "ws", "sk": "run#1", "gsi1pk": "org#runs", "gsi1sk": "1"}, if_absent=True)
        assert table.get("ws", "run#1") == {"pk": "ws", "sk": "run#1", "gsi1pk": "org#runs", "gsi1sk": "1"}
        assert [i["sk"] for i in table.query("ws")] == ["run#1", "ws"]
        assert [i["sk"] for i in table.query("org#runs", index="gsi1")] == ["run#1"]  # the item entered it
        table.transact([Put({"pk": "ws", "sk": "ws", "version": 2}, if_version=1), Delete("ws", "run#1")])
        assert table.get("ws", "ws") == {"pk": "ws", "sk": "ws", "version": 2} and table.get("ws", "run#1") is None
        assert [i["sk"] for i in table.query("ws")] == ["ws"]
        assert table.query("org#runs", index="gsi1") == []  # the item it listed left it
        table.batch_put([{"pk": "ws", "sk": f"r{i}"} for i in range(3)])
        assert [i["sk"] for i in table.batch_get([("ws", "r0"), ("ws", "r2")])] == ["r0", "r2"]
        table.batch_delete([("ws", "r0")])
        assert table.get("ws", "r0") is None and [i["sk"] for i in table.query("ws", prefix="r")] == ["r1", "r2"]
        table.delete("ws", "ws", if_version=2)
        assert table.get("ws", "ws") is None and table.batch_get([("ws", "ws")]) == []
    assert table.get("ws", "ws") is None and [i["sk"] for i in table.query("ws")] == ["r1", "r2"]


def test_a_lost_conditional_write_leaves_what_is_held_true_to_the_table(
    tables: tuple[HeldReadsTable, Table],
) -> None:
    table, other = tables
    table.put({"pk": "ws", "sk": "ws", "version": 1})
    with held_reads():
        assert table.get("ws", "ws") == {"pk": "ws", "sk": "ws", "version": 1}
        assert table.get("ws", "new") is None
        assert [i["sk"] for i in table.query("ws")] == ["ws"]
        other.put({"pk": "ws", "sk": "ws", "version": 2})  # another request decided first
        other.put({"pk": "ws", "sk": "new", "by": "other"})
        with pytest.raises(ConditionFailed):
            table.put({"pk": "ws", "sk": "ws", "version": 2, "by": "me"}, if_version=1)
        # the caller re-reads and decides again: on what is stored, neither the stale copy nor its lost write
        assert table.get("ws", "ws") == {"pk": "ws", "sk": "ws", "version": 2}
        assert [i["sk"] for i in table.query("ws")] == ["new", "ws"]
        with pytest.raises(ConditionFailed):
            table.put({"pk": "ws", "sk": "new", "by": "me"}, if_absent=True)
        assert table.get("ws", "new") == {"pk": "ws", "sk": "new", "by": "other"}
        other.delete("ws", "new")
        with pytest.raises(ConditionFailed):  # a transaction refused whole: none of its writes is held
            table.transact([Put({"pk": "ws", "sk": "ws", "version": 3}, if_version=2), Check("ws", "new")])
        assert table.get("ws", "ws") == {"pk": "ws", "sk": "ws", "version": 2} and table.get("ws", "new") is None
        with pytest.raises(ConditionFailed):
            table.delete("ws", "ws", if_version=1)
        assert table.get("ws", "ws") == {"pk": "ws", "sk": "ws", "version": 2}
        with pytest.raises(TooLarge):  # refused before it is sent: nothing written, nothing held of it
            table.put({"pk": "ws", "sk": "ws", "version": 3, "blob": "x" * (ITEM_MAX_BYTES + 1)}, if_version=2)
        assert table.get("ws", "ws") == {"pk": "ws", "sk": "ws", "version": 2}
        table.put({"pk": "ws", "sk": "ws", "version": 3}, if_version=2)  # decided again, on what is stored
        assert table.get("ws", "ws") == {"pk": "ws", "sk": "ws", "version": 3}
    assert other.get("ws", "ws") == {"pk": "ws", "sk": "ws", "version": 3}


def test_a_nested_scope_joins_the_one_open(tables: tuple[HeldReadsTable, Table]) -> None:
    table, other = tables
    other.put({"pk": "k", "sk": "x", "n": 1})
    with held_reads():
        assert table.get("k", "x") == {"pk": "k", "sk": "x", "n": 1}
        with held_reads():
            other.put({"pk": "k", "sk": "x", "n": 2})
            assert table.get("k", "x") == {"pk": "k", "sk": "x", "n": 1}
        assert table.get("k", "x") == {"pk": "k", "sk": "x", "n": 1}  # the inner block's end ended nothing
    assert table.get("k", "x") == {"pk": "k", "sk": "x", "n": 2}
