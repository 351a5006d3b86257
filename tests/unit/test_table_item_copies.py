"""The memory table and the held reads copy every item they take in or hand out (`adapters/table.py: copy_value`):
what a caller changes afterwards never reaches the stored or the held item, and the items' usual values (dicts,
lists, strings, numbers) are copied without `copy.deepcopy`, which made half of a memory container's cost."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from contextlib import nullcontext
from typing import Any

import pytest
from terrace.adapters.held_reads import HeldReadsTable, held_reads
from terrace.adapters.memory_table import MemoryTable
from terrace.adapters.table import Put, Table, copy_value


def _item() -> dict[str, Any]:
    return {
        "pk": "ws#1",
        "sk": "run#1",
        "version": 1,
        "n": 1.5,
        "ok": True,
        "none": None,
        "raw": b"\x00\x01",
        "tags": ["a", {"k": ["v"]}],
        "nested": {"outputs": {"x": {"value": [1, 2, {"deep": "y"}]}}},
    }


@pytest.fixture(params=["memory", "held", "held-in-scope"])
def table(request: pytest.FixtureRequest) -> Iterator[Table]:
    memory = MemoryTable()
    with held_reads() if request.param == "held-in-scope" else nullcontext():
        yield memory if request.param == "memory" else HeldReadsTable(memory)


def test_what_a_caller_changes_never_reaches_the_stored_item(table: Table) -> None:
    item = _item()
    table.put(item)
    item["nested"]["outputs"]["x"]["value"][2]["deep"] = "changed after the put"
    item["tags"].append("late")
    got = table.get("ws#1", "run#1")
    assert got == _item()
    assert got is not None
    got["nested"]["outputs"]["x"]["value"].clear()
    got["tags"][1]["k"].append("w")
    [queried] = table.query("ws#1")
    assert queried == _item() and table.get("ws#1", "run#1") == _item()
    queried["nested"].clear()
    table.transact([Put({**_item(), "sk": "run#2"})])
    assert table.batch_get([("ws#1", "run#1"), ("ws#1", "run#2")]) == [_item(), {**_item(), "sk": "run#2"}]


def test_items_of_the_usual_values_are_copied_without_deepcopy(table: Table, monkeypatch: pytest.MonkeyPatch) -> None:
    deep: list[object] = []
    original = copy.deepcopy
    monkeypatch.setattr(copy, "deepcopy", lambda value, *a: deep.append(value) or original(value, *a))
    table.put(_item())
    table.transact([Put({**_item(), "sk": "run#2"})])
    assert table.get("ws#1", "run#1") == _item() and len(table.query("ws#1")) == 2
    assert deep == []


def test_copy_value_copies_as_deepcopy_does() -> None:
    odd = {"set": {"a", "b"}, "tuple": (1, [2]), "list": [{"s": {1}}]}
    copied = copy_value(odd)
    assert copied == odd == copy.deepcopy(odd)
    copied["set"].add("c")
    copied["tuple"][1].append(3)
    copied["list"][0]["s"].add(2)
    assert odd == {"set": {"a", "b"}, "tuple": (1, [2]), "list": [{"s": {1}}]}
