"""The state area's store on each table (memory, SQLite, DynamoDB on moto): state versions read back whole and
listed per workspace by creation, written only as new or from the version read (alone or in one transaction with
another area's item, all or nothing), a pending version discarded by the write that supersedes it; outputs (large
values in the blob store) and the resource index; and `delete_all_of` taking a workspace's versions, blobs,
outputs and index and nothing of another workspace's."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from implementations import IMPLEMENTATIONS, open_table
from terrace.adapters.memory_blobs import MemoryBlobs
from terrace.adapters.table import ConditionFailed, Put
from terrace.domain.errors import NotFound
from terrace.domain.state import OutputValue, ResourceInstance
from terrace.domain.state_versions import DISCARDED, FINALIZED, PENDING, StateVersion
from terrace.domain.workspace import Workspace
from terrace.services.state.store import StateStore
from terrace.services.state.store_index import MAX_INLINE_OUTPUT_BYTES


@pytest.fixture
def blobs() -> MemoryBlobs:
    return MemoryBlobs()


@pytest.fixture(params=IMPLEMENTATIONS)
def store(request: pytest.FixtureRequest, tmp_path: Path, blobs: MemoryBlobs) -> Iterator[StateStore]:
    with open_table(request.param, tmp_path, lambda: str(request.getfixturevalue("moto_endpoint"))) as table:
        yield StateStore(table, blobs)


def _sv(sv_id: str, created_at: str, workspace: str = "ws-abc", status: str = FINALIZED) -> StateVersion:
    return StateVersion(
        id=sv_id,
        workspace_id=workspace,
        organization="acme",
        serial=1,
        lineage="l-1",
        md5="0" * 32,
        status=status,
        created_at=created_at,
        size=10,
        summary={"resources": [{"type": "null_resource", "count": 1}]},
        output_ids=("wos-1", "wos-2"),
        blob_version="v1",
    )


def _ws(ws_id: str = "ws-abc", current: str | None = None) -> Workspace:
    at = "2026-01-01T00:00:00Z"
    return Workspace(ws_id, "prod", "acme", at, at, 1, current_state_version_id=current)


def _foreign(version: int | None = None) -> Any:
    """Another area's item in the same transaction (a workspace, as the state writers join it)."""
    item = {"pk": "ws-abc", "sk": "ws-test", "version": (version or 0) + 1}
    return Put(item, if_absent=version is None, if_version=version)


def test_versions_read_back_whole_and_listed_by_creation(store: StateStore) -> None:
    store.transact([_foreign(), store.save_op(_sv("sv-2", "2026-01-02T00:00:00Z"))])
    store.transact([store.save_op(_sv("sv-1", "2026-01-01T00:00:00Z"))])
    store.transact([store.save_op(_sv("sv-3", "2026-01-01T00:00:00Z", workspace="ws-other"))])
    assert store.load("sv-2") == _sv("sv-2", "2026-01-02T00:00:00Z") and store.recorded("sv-2")
    assert [sv.id for sv in store.list_for_workspace("ws-abc")] == ["sv-1", "sv-2"]
    assert [sv.id for sv in store.list_for_workspace("ws-abc", newest_first=True)] == ["sv-2", "sv-1"]
    assert store.find("sv-nothere") is None and store.find("not-an-id") is None and not store.recorded("sv-x")
    with pytest.raises(NotFound):
        store.load("sv-nothere")
    with pytest.raises(ConditionFailed):
        store.transact([store.save_op(_sv("sv-1", "2026-01-01T00:00:00Z"))])  # a new version is new


def test_writes_need_the_version_read_and_a_transaction_is_all_or_nothing(store: StateStore) -> None:
    sv = _sv("sv-1", "2026-01-01T00:00:00Z")
    store.transact([_foreign(), store.save_op(sv)])
    first = dataclasses.replace(sv, serial=2, version=2)
    store.save(first, 1)
    with pytest.raises(ConditionFailed):
        store.save(dataclasses.replace(sv, serial=3, version=2), 1)
    assert not store.save_if_unchanged(dataclasses.replace(sv, serial=3, version=2), 1)
    assert store.save_if_unchanged(dataclasses.replace(first, serial=4, version=3), 2)
    with pytest.raises(ConditionFailed):  # the other area's item lost: the version is not written either
        store.transact([_foreign(version=7), store.save_op(dataclasses.replace(first, serial=5, version=4), 3)])
    assert store.load("sv-1").serial == 4 and store.load("sv-1").version == 3


def test_a_pending_version_is_discarded_by_the_write_that_supersedes_it(store: StateStore) -> None:
    store.transact([store.save_op(_sv("sv-p", "2026-01-01T00:00:00Z", status=PENDING))])
    store.transact([store.save_op(_sv("sv-f", "2026-01-01T00:00:00Z"))])
    assert store.discard_pending_ops(None) == [] and store.discard_pending_ops("sv-f") == []
    assert store.discard_pending_ops("sv-gone") == []
    ops = store.discard_pending_ops("sv-p")
    store.transact([*ops, store.save_op(_sv("sv-n", "2026-01-02T00:00:00Z"))])
    gone = store.load("sv-p")
    assert gone.status == DISCARDED and gone.error == "superseded by a newer state version" and gone.version == 2
    with pytest.raises(ConditionFailed):  # discarded once: the ops read before are stale
        store.transact(ops)


def test_outputs_by_version_large_values_in_blobs(store: StateStore, blobs: MemoryBlobs) -> None:
    big = "x" * (MAX_INLINE_OUTPUT_BYTES + 1)
    outputs = [OutputValue("b", True, "string", "string", big), OutputValue("a", False, "number", "number", 1)]
    ids = store.index.put_outputs("sv-1", _ws(), outputs)
    found = store.index.outputs("sv-1")
    assert [o.name for o in found] == ["a", "b"] and [o.value for o in found] == [1, big]
    assert store.index.output(ids[0]).value == big and store.index.output(ids[1]).sensitive is False
    for bad in ("wos-nothere", "not-an-id"):
        with pytest.raises(NotFound):
            store.index.output(bad)
    store.index.delete_output_ids([ids[1]])
    assert [o.name for o in store.index.outputs("sv-1")] == ["b"]
    store.index.delete_outputs("sv-1")
    assert store.index.outputs("sv-1") == [] and blobs.objects == {}


def _instance(address: str, digest: str) -> ResourceInstance:
    return ResourceInstance(address, address.split(".")[-1], "null_resource", "managed", "root",
                            "hashicorp/null", None, (f"id-{address}",), digest)  # fmt: skip


def test_the_resource_index_keeps_unchanged_instances_and_drops_removed_ones(store: StateStore) -> None:
    ws = _ws()
    store.index.replace_resources(ws, "sv-1", (_instance("null_resource.a", "1"), _instance("null_resource.b", "1")))
    before = {r.address: r for r in store.index.resources("ws-abc")}
    store.index.replace_resources(ws, "sv-2", (_instance("null_resource.a", "1"), _instance("null_resource.c", "1")))
    after = {r.address: r for r in store.index.resources("ws-abc")}
    assert sorted(after) == ["null_resource.a", "null_resource.c"]
    kept = after["null_resource.a"]
    assert kept.created_at == before["null_resource.a"].created_at and kept.modified_by == "sv-1"
    assert kept.indexed_from == "sv-2" and after["null_resource.c"].modified_by == "sv-2"
    store.index.replace_resources(_ws("ws-other"), "sv-9", (_instance("null_resource.z", "1"),))
    assert sorted(r.address for r in store.index.resources_in("acme")) == [
        "null_resource.a",
        "null_resource.c",
        "null_resource.z",
    ]
    assert store.index.resources_in("other-org") == []


def test_delete_all_of_a_workspace(store: StateStore, blobs: MemoryBlobs) -> None:
    for sv_id, ws_id in (("sv-1", "ws-abc"), ("sv-2", "ws-abc"), ("sv-9", "ws-other")):
        sv = _sv(sv_id, "2026-01-01T00:00:00Z", workspace=ws_id)
        store.transact([store.save_op(sv)])
        blobs.put(sv.blob_key, b"{}")
        blobs.put(sv.json_blob_key, b"{}")
        big = OutputValue("o", False, "string", "string", "x" * (MAX_INLINE_OUTPUT_BYTES + 1))
        store.index.put_outputs(sv_id, _ws(ws_id), [big, OutputValue("p", False, "number", "number", 1)])
        store.index.replace_resources(_ws(ws_id), sv_id, (_instance("null_resource.a", "1"),))
    store.delete_all_of(workspace="ws-abc")
    assert store.list_for_workspace("ws-abc") == [] and store.find("sv-1") is None
    assert store.index.outputs("sv-1") == store.index.outputs("sv-2") == [] == store.index.resources("ws-abc")
    assert all(key.startswith("state/ws-other/") for key in blobs.objects)
    assert [sv.id for sv in store.list_for_workspace("ws-other")] == ["sv-9"]
    assert len(store.index.outputs("sv-9")) == 2 and len(store.index.resources("ws-other")) == 1
    assert len(blobs.objects) == 3  # the other workspace's state, JSON state and large output
