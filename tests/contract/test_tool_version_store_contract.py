"""The deployment's tool version records on each table (memory, SQLite, DynamoDB on moto): listed per tool newest
version first, one record per version of a tool (the claim refuses a second, also when a record is renamed onto a
taken version), replaced only from the version read, and deleted with their claim."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from implementations import IMPLEMENTATIONS, open_table
from terrace.adapters.table import ConditionFailed
from terrace.services.admin.store import ToolVersionStore


@pytest.fixture(params=IMPLEMENTATIONS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ToolVersionStore]:
    with open_table(request.param, tmp_path, lambda: str(request.getfixturevalue("moto_endpoint"))) as table:
        yield ToolVersionStore(table)


def _record(record_id: str, version: str, tool: str = "terraform") -> dict[str, Any]:
    return {"id": record_id, "tool": tool, "version": 1, "tool_version": version, "created_at": "t",
            "official": False, "enabled": True, "beta": False, "deprecated": False, "url": "u", "sha": ""}  # fmt: skip


def test_listed_newest_first_one_record_per_version(store: ToolVersionStore) -> None:
    for record_id, version in (("tool-a", "1.9.0"), ("tool-b", "1.10.0"), ("tool-c", "1.10.0-rc1")):
        assert store.create(_record(record_id, version))
    assert store.create(_record("tool-t", "1.10.0", tool="opentofu"))  # another tool's version is its own
    assert not store.create(_record("tool-d", "1.9.0"))  # claimed
    assert [r["tool_version"] for r in store.list("terraform")] == ["1.10.0", "1.10.0-rc1", "1.9.0"]
    assert store.find("tool-a") == _record("tool-a", "1.9.0") and store.find("tool-d") is None
    assert store.find("not-an-id") is None
    assert store.claimed("terraform", "1.9.0") and not store.claimed("terraform", "1.8.0")


def test_replace_moves_the_claim_and_needs_the_version_read(store: ToolVersionStore) -> None:
    store.create(_record("tool-a", "1.9.0"))
    store.create(_record("tool-b", "1.10.0"))
    renamed = {**_record("tool-a", "1.9.1"), "version": 2}
    assert store.replace(renamed, 1, "1.9.0")
    assert store.claimed("terraform", "1.9.1") and not store.claimed("terraform", "1.9.0")
    assert [r["tool_version"] for r in store.list("terraform")] == ["1.10.0", "1.9.1"]
    assert not store.replace({**renamed, "enabled": False, "version": 3}, 1, "1.9.1")  # not the version read
    assert not store.replace({**_record("tool-a", "1.10.0"), "version": 3}, 2, "1.9.1")  # onto a taken version
    assert store.find("tool-a") == renamed


def test_delete_takes_the_claim_and_needs_the_version_read(store: ToolVersionStore) -> None:
    store.create(_record("tool-a", "1.9.0"))
    with pytest.raises(ConditionFailed):
        store.delete({**_record("tool-a", "1.9.0"), "version": 5})
    store.delete(_record("tool-a", "1.9.0"))
    assert store.find("tool-a") is None and store.list("terraform") == [] and not store.claimed("terraform", "1.9.0")
    assert store.create(_record("tool-b", "1.9.0"))  # the version is free again
