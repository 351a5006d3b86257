"""The Table port (`adapters/table.py`): conditional puts and deletes, all-or-nothing transactions, the gsi1
ordering, TTL attributes, the item-size guard, number round trips. Memory is the reference semantics. The table
the composition root builds, each implementation under the held reads (`adapters/held_reads.py`), keeps the
same contract outside a scope and inside one (`test_held_reads_contract.py`: what a scope adds)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import pytest
from implementations import HELD_TABLES, IMPLEMENTATIONS, open_held_table, open_table
from terrace.adapters.held_reads import held_reads
from terrace.adapters.table import Check, ConditionFailed, Delete, Put, Table
from terrace.domain.errors import TooLarge
from terrace.domain.limits import ITEM_MAX_BYTES


@pytest.fixture(params=[*IMPLEMENTATIONS, *HELD_TABLES])
def table(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Table]:
    opener = open_held_table if request.param.startswith("held-") else open_table
    with opener(request.param, tmp_path, lambda: str(request.getfixturevalue("moto_endpoint"))) as made:
        yield made


def test_conditional_puts_and_deletes(table: Table) -> None:
    table.put({"pk": "a", "sk": "x", "version": 1, "n": 5})
    with pytest.raises(ConditionFailed):
        table.put({"pk": "a", "sk": "x", "version": 2}, if_absent=True)
    with pytest.raises(ConditionFailed):
        table.put({"pk": "a", "sk": "x", "version": 2}, if_version=7)
    with pytest.raises(ConditionFailed):
        table.put({"pk": "nothing", "sk": "x", "version": 2}, if_version=1)
    table.put({"pk": "a", "sk": "x", "version": 2, "n": 6}, if_version=1)
    assert table.get("a", "x") == {"pk": "a", "sk": "x", "version": 2, "n": 6}
    with pytest.raises(ConditionFailed):
        table.delete("a", "x", if_version=1)
    table.delete("a", "x", if_version=2)
    assert table.get("a", "x") is None
    table.delete("a", "x")  # deleting what is gone is fine
    with pytest.raises(ConditionFailed):
        table.delete("a", "x", if_version=2)


def test_values_round_trip(table: Table) -> None:
    item: dict[str, Any] = {
        "pk": "n",
        "sk": "n",
        "int": 42,
        "float": 1.5,
        "big": 2**53,
        "flag": True,
        "none": None,
        "text": "ünïcødé ✓",
        "nested": {"list": [1, 2.25, "s", {"deep": 0}], "empty": ""},
    }
    table.put(item)
    got = table.get("n", "n")
    assert got == item
    assert got is not None and isinstance(got["int"], int) and isinstance(got["float"], float)


def test_transactions_are_all_or_nothing(table: Table) -> None:
    table.put({"pk": "ws", "sk": "ws", "version": 1})
    with pytest.raises(ConditionFailed):
        table.transact(
            [
                Put({"pk": "ws", "sk": "ws", "version": 2}, if_version=1),
                Put({"pk": "sv", "sk": "sv"}, if_absent=True),
                Check("missing", "x"),
            ]
        )
    assert table.get("ws", "ws") == {"pk": "ws", "sk": "ws", "version": 1} and table.get("sv", "sv") is None
    with pytest.raises(ConditionFailed):
        table.transact([Delete("ws", "ws"), Check("ws2", "ws", must_exist=True)])
    assert table.get("ws", "ws") is not None
    table.transact(
        [Put({"pk": "ws", "sk": "ws", "version": 2}, if_version=1), Put({"pk": "sv", "sk": "sv"}, if_absent=True)]
    )
    assert table.get("ws", "ws") == {"pk": "ws", "sk": "ws", "version": 2} and table.get("sv", "sv") is not None
    table.transact([Delete("sv", "sv"), Check("ws", "ws", if_version=2), Check("gone", "x", must_exist=False)])
    assert table.get("sv", "sv") is None
    with pytest.raises(ConditionFailed):
        table.transact([Put({"pk": "z", "sk": "z"}), Check("ws", "ws", must_exist=False)])
    assert table.get("z", "z") is None


def test_gsi1_and_base_ordering_with_prefix_reverse_and_limit(table: Table) -> None:
    for i in (3, 1, 2):
        table.put({"pk": f"sv-{i}", "sk": "sv", "gsi1pk": "ws#state-versions", "gsi1sk": f"2024-01-0{i}#sv-{i}"})
        table.put({"pk": "ws#resources", "sk": f"null_resource.r{i}"})
    table.put({"pk": "sv-0", "sk": "sv", "gsi1pk": "ws#state-versions"})  # no gsi1sk: not in the index
    table.put({"pk": "sv-9", "sk": "sv", "gsi1pk": "other", "gsi1sk": "2024-01-01"})
    assert [i["pk"] for i in table.query("ws#state-versions", index="gsi1")] == ["sv-1", "sv-2", "sv-3"]
    assert [i["pk"] for i in table.query("ws#state-versions", index="gsi1", reverse=True, limit=2)] == ["sv-3", "sv-2"]
    assert [i["pk"] for i in table.query("ws#state-versions", index="gsi1", prefix="2024-01-02")] == ["sv-2"]
    assert [i["sk"] for i in table.query("ws#resources", prefix="null_resource.r2")] == ["null_resource.r2"]
    assert [i["sk"] for i in table.query("ws#resources", reverse=True)] == [f"null_resource.r{i}" for i in (3, 2, 1)]
    assert table.query("ws#resources", prefix="zzz") == []


def test_a_query_after_a_sort_key_returns_only_the_greater_ones(table: Table) -> None:
    for key in ("001#-", "001#000000000000", "001#000000000010", "001#~", "002#-"):
        table.put({"pk": "plan-1#log", "sk": key})
    assert [i["sk"] for i in table.query("plan-1#log", after="001#000000000000")] == [
        "001#000000000010",
        "001#~",
        "002#-",
    ]
    assert [i["sk"] for i in table.query("plan-1#log", after="002#-")] == []
    assert [i["sk"] for i in table.query("plan-1#log", after="", limit=1)] == ["001#-"]
    table.put({"pk": "sv-1", "sk": "sv", "gsi1pk": "ws#svs", "gsi1sk": "2024-01-01"})
    table.put({"pk": "sv-2", "sk": "sv", "gsi1pk": "ws#svs", "gsi1sk": "2024-01-02"})
    assert [i["pk"] for i in table.query("ws#svs", index="gsi1", after="2024-01-01")] == ["sv-2"]


def test_byte_ordering_of_sort_keys(table: Table) -> None:
    keys = ["a", "B", "a#1", "a#10", "a#2", "é", "~", "Z"]
    for key in keys:
        table.put({"pk": "order", "sk": key})
    assert [i["sk"] for i in table.query("order")] == sorted(keys, key=lambda k: k.encode())


def test_ttl_attribute_is_kept_and_expired_items_stay_readable_until_swept(table: Table) -> None:
    past = int(time.time()) - 60
    table.put({"pk": "tok", "sk": "tok", "expires_at": past})
    table.put({"pk": "tok2", "sk": "tok", "expires_at": past + 3600 * 24})
    assert table.get("tok", "tok") == {"pk": "tok", "sk": "tok", "expires_at": past}
    swept: Any = getattr(table, "inner", table)  # the sweep is the implementation's, under any held reads
    sweep = getattr(swept, "purge_expired", None)
    if sweep is None:
        pytest.skip("this implementation sweeps expired items on its own schedule (DynamoDB TTL)")
    assert sweep() == 1
    assert swept.get("tok", "tok") is None and swept.get("tok2", "tok") is not None


def test_item_size_guard_refuses_a_transaction_whole(table: Table) -> None:
    table.put({"pk": "keep", "sk": "x", "version": 1})
    big = {"pk": "big", "sk": "x", "blob": "x" * (ITEM_MAX_BYTES + 1)}
    with pytest.raises(TooLarge):
        table.put(big)
    with pytest.raises(TooLarge):
        table.transact([Put({"pk": "keep", "sk": "x", "version": 2}, if_version=1), Put(big)])
    with pytest.raises(TooLarge):
        table.batch_put([{"pk": "small", "sk": "x"}, big])
    assert table.get("keep", "x") == {"pk": "keep", "sk": "x", "version": 1}
    assert table.get("big", "x") is None and table.get("small", "x") is None


def test_batch_get_put_and_delete(table: Table) -> None:
    for i in range(130):
        table.put({"pk": f"k{i}", "sk": "x", "i": i})
    got = table.batch_get([(f"k{i}", "x") for i in range(135)] + [("k0", "x")])
    assert sorted(item["i"] for item in got) == list(range(130))
    items = [{"pk": "bulk", "sk": f"{i:03}", "n": i, "tags": ["a", i]} for i in range(60)]
    table.batch_put([*items, {"pk": "bulk", "sk": "000", "n": -1, "tags": []}])  # a repeated key: the last one wins
    got = table.query("bulk")
    assert [item["n"] for item in got] == [-1, *range(1, 60)] and got[1]["tags"] == ["a", 1]
    table.batch_delete([("bulk", f"{i:03}") for i in range(0, 60, 2)] + [("bulk", "missing"), ("bulk", "002")])
    assert [item["n"] for item in table.query("bulk")] == list(range(1, 60, 2))
    table.batch_put([])
    table.batch_delete([])


def test_concurrent_conditional_writers_one_wins_each_round(table: Table, request: pytest.FixtureRequest) -> None:
    """Four writers read, decide and write. Under a scope (`-in-scope`) each writer is a thread with a unit of
    work of its own, held across its rounds: a lost write must forget what it held, or it decides on it again."""
    table.put({"pk": "counter", "sk": "c", "version": 0})
    wins: list[int] = []
    lock = threading.Lock()
    in_scope = str(request.node.callspec.params["table"]).endswith("-in-scope")

    def bump() -> None:
        with held_reads() if in_scope else nullcontext():
            for _ in range(10):
                current = table.get("counter", "c")
                assert current is not None
                try:
                    table.put(
                        {"pk": "counter", "sk": "c", "version": current["version"] + 1}, if_version=current["version"]
                    )
                except ConditionFailed:
                    continue
                with lock:
                    wins.append(current["version"] + 1)

    threads = [threading.Thread(target=bump) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    stored: Any = getattr(table, "inner", table)  # this thread's own scope holds its write until it ends
    final = stored.get("counter", "c")
    assert final is not None and final["version"] == len(wins) and sorted(wins) == list(range(1, len(wins) + 1))
