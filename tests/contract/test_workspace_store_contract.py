"""The workspaces area's stores on each table (memory, SQLite, DynamoDB on moto): workspaces read back whole and
listed by name through their claims, a name taken once, a write only from the version read, a rename that moves
the claim; variables and set variables one per category and key; variable set names unique across renames; run
triggers' link and count refusing a duplicate and a stale count; agents' pings from the version read; the tag
registry's first writer winning; and `delete_all_of` leaving nothing of a workspace or an organization behind (and
nothing of another's)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from implementations import IMPLEMENTATIONS, open_table
from terrace.adapters.table import ConditionFailed, Table
from terrace.domain.agent_pools import Agent, AgentPool
from terrace.domain.errors import Invalid
from terrace.domain.run_triggers import RunTrigger
from terrace.domain.varsets import VariableSet
from terrace.domain.workspace import Workspace, WorkspaceLock
from terrace.services.workspaces.store import WorkspaceAreaStore
from terrace.services.workspaces.store_ssh_keys import StoredSSHKey
from terrace.services.workspaces.store_tags import RegisteredTag

AT = "2026-01-01T00:00:00.000Z"


@pytest.fixture(params=IMPLEMENTATIONS)
def table(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Table]:
    with open_table(request.param, tmp_path, lambda: str(request.getfixturevalue("moto_endpoint"))) as opened:
        yield opened


def _ws(ws_id: str, name: str, org: str = "acme", **fields: Any) -> Workspace:
    return Workspace(
        **{"id": ws_id, "name": name, "organization": org, "created_at": AT, "updated_at": AT, "version": 1, **fields}
    )


def _var(var_id: str, key: str, owner: tuple[str, str], category: str = "env") -> dict[str, Any]:
    return {"id": var_id, owner[0]: owner[1], "key": key, "category": category, "hcl": False, "sensitive": False,
            "description": "", "created_at": AT, "value": "v", "version_id": "x", "version": 1}  # fmt: skip


def _everything(table: Table, org: str, ws_id: str) -> WorkspaceAreaStore:
    """An organization `org` with workspace `ws_id` holding one of everything the area stores."""
    store = WorkspaceAreaStore(table)
    store.workspaces.create(_ws(ws_id, f"n-{ws_id}", org, auto_destroy_at="2030-01-01T00:00:00.000Z"))
    store.workspaces.markers.sync(_ws(ws_id, f"n-{ws_id}", org, auto_destroy_at="2030-01-01T00:00:00.000Z"))
    assert store.variables.create(_var(f"var-w{ws_id[3:]}", "A", ("workspace_id", ws_id)))
    vs = VariableSet(f"varset-{ws_id[3:]}", org, "set", "", False, False, (ws_id,), (), AT, AT, 1)
    assert store.varsets.create(vs, store.varsets.variable_ops(_var(f"var-s{ws_id[3:]}", "B", ("varset_id", vs.id))))
    store.ssh_keys.create(StoredSSHKey(f"sshkey-{ws_id[3:]}", org, "org-id", "k", AT, "sealed", 1))
    store.agent_pools.create(AgentPool(f"apool-{ws_id[3:]}", org, "pool", AT), "org-id")
    store.agent_pools.register(Agent(f"agent-{ws_id[3:]}", f"apool-{ws_id[3:]}", org, "a", "", "idle", AT, 1.0, ""))
    store.tags.register(RegisteredTag(f"tag-{ws_id[3:]}", org, "prod", AT))
    return store


def test_workspaces_read_back_whole_listed_by_name_and_written_from_the_version_read(table: Table) -> None:
    store = WorkspaceAreaStore(table).workspaces
    lock = WorkspaceLock(holder="user:user-1", username="alice", reason="", created_at=AT, lock_id="L")
    full = _ws("ws-b", "beta", tag_names=("x",), tag_bindings=(("k", "v"),), lock=lock, extra={"e": 1}, health={})
    assert store.create(full) and store.create(_ws("ws-a", "alpha"))
    assert store.create(_ws("ws-c", "beta")) is False  # the name is taken
    assert store.find("ws-b") == full and store.find("ws-nothere") is None and store.find("not-an-id") is None
    assert store.names("acme") == [("alpha", "ws-a"), ("beta", "ws-b")] and store.id_named("acme", "beta") == "ws-b"
    assert sorted(ws.id for ws in store.load_many(["ws-a", "ws-b"])) == ["ws-a", "ws-b"]
    changed = dataclasses.replace(full, version=2, description="d")
    store.replace(changed, 1)
    with pytest.raises(ConditionFailed):
        store.replace(dataclasses.replace(full, version=2), 1)
    assert store.replace_if_unchanged(dataclasses.replace(full, version=2), 1) is False
    table.transact([store.put_op(dataclasses.replace(changed, version=3), 2)])
    assert store.rename("beta", dataclasses.replace(changed, name="gamma", version=4), 3)
    assert store.rename("gamma", dataclasses.replace(changed, name="alpha", version=5), 4) is False  # taken
    assert store.names("acme") == [("alpha", "ws-a"), ("gamma", "ws-b")] and store.id_named("acme", "beta") is None
    assert store.delete(store.find("ws-b") or full, []) and store.find("ws-b") is None
    assert store.delete(_ws("ws-a", "alpha", version=7)) is False  # changed since read: still there
    assert store.names("acme") == [("alpha", "ws-a")]


def test_variables_one_per_category_and_key(table: Table) -> None:
    store = WorkspaceAreaStore(table).variables
    first = _var("var-1", "A", ("workspace_id", "ws-a"))
    assert store.create(first) and store.create(_var("var-2", "A", ("workspace_id", "ws-a"), "terraform"))
    assert store.create(_var("var-3", "A", ("workspace_id", "ws-a"))) is False
    assert [v["id"] for v in store.of_workspace("ws-a")] == ["var-1", "var-2"]  # env#A, terraform#A
    renamed = {**first, "key": "Z", "version": 2}
    assert store.update(renamed, first, 1) and store.update({**first, "version": 2}, first, 1) is False
    assert store.create(_var("var-4", "A", ("workspace_id", "ws-a")))  # the old key was released
    assert store.find("var-1") is not None and store.find("var-1")["key"] == "Z"  # type: ignore[index]
    store.delete(renamed)
    assert store.find("var-1") is None and store.create(_var("var-5", "Z", ("workspace_id", "ws-a")))


def test_variable_sets_names_and_their_variables(table: Table) -> None:
    store = WorkspaceAreaStore(table).varsets
    s1 = VariableSet("varset-1", "acme", "one", "", False, False, (), (), AT, AT, 1)
    s2 = dataclasses.replace(s1, id="varset-2", name="two")
    assert (
        store.create(s1, [])
        and store.create(s2, [])
        and store.create(dataclasses.replace(s1, id="varset-3"), []) is False
    )
    assert [vs.id for vs in store.of_organization("acme")] == ["varset-1", "varset-2"] and store.find("varset-1") == s1
    with pytest.raises(Invalid):
        store.replace(dataclasses.replace(s2, name="one", version=2), s2)
    with pytest.raises(ConditionFailed):
        store.replace(dataclasses.replace(s2, version=2), dataclasses.replace(s2, version=5))
    store.replace(dataclasses.replace(s1, name="uno", version=2), s1)
    assert store.create(dataclasses.replace(s1, id="varset-3"), [])  # "one" is free again
    var = _var("var-1", "K", ("varset_id", "varset-2"))
    assert store.create_variable(var) and store.create_variable(_var("var-2", "K", ("varset_id", "varset-2"))) is False
    assert store.variable_key_taken(var) and [v["id"] for v in store.variables("varset-2")] == ["var-1"]
    assert store.update_variable({**var, "key": "L", "version": 2}, var, 1)
    assert store.find_variable("var-1")["key"] == "L"  # type: ignore[index]
    store.delete(store.find("varset-2") or s2)
    assert store.find("varset-2") is None and store.variables("varset-2") == [] and store.find_variable("var-1") is None


def test_run_triggers_refuse_a_duplicate_and_a_stale_count(table: Table) -> None:
    store = WorkspaceAreaStore(table).run_triggers
    first = RunTrigger("rt-1", "acme", "ws-t", "ws-s1", AT)
    store.add(first, store.sources("ws-t"))
    with pytest.raises(ConditionFailed):
        store.add(RunTrigger("rt-2", "acme", "ws-t", "ws-s2", AT), store.sources("ws-x"))  # a stale (absent) count
    with pytest.raises(ConditionFailed):
        store.add(RunTrigger("rt-3", "acme", "ws-t", "ws-s1", AT), store.sources("ws-t"))  # the same pair again
    store.add(RunTrigger("rt-4", "acme", "ws-t", "ws-s2", "2026-01-02T00:00:00.000Z"), store.sources("ws-t"))
    assert store.sources("ws-t").count == 2 and store.linked("ws-s1", "ws-t") and not store.linked("ws-t", "ws-s1")
    assert [t.id for t in store.inbound("ws-t")] == ["rt-1", "rt-4"] and store.outbound("ws-s2")[0].id == "rt-4"
    store.remove(first)
    store.remove(first)  # gone already: nothing
    assert store.sources("ws-t").count == 1 and store.find("rt-1") is None and store.find("rt-4") is not None


def test_agents_ping_from_the_version_read_and_the_tag_registry_keeps_the_first_id(table: Table) -> None:
    area = WorkspaceAreaStore(table)
    area.agent_pools.create(AgentPool("apool-1", "acme", "p", AT), "org-1")
    assert area.agent_pools.replace(AgentPool("apool-1", "acme", "q", AT, version=2), "org-1", 1)
    assert area.agent_pools.replace(AgentPool("apool-1", "acme", "r", AT, version=2), "org-1", 1) is False
    stored = area.agent_pools.find("apool-1")
    assert stored is not None and stored.pool.name == "q" and stored.organization_id == "org-1"
    area.agent_pools.register(Agent("agent-1", "apool-1", "acme", "a", "", "idle", AT, 100.0, ""))
    read = area.agent_pools.agent_item("agent-1") or {}
    assert area.agent_pools.ping(read, "busy", AT, 200.0).status == "busy"
    assert area.agent_pools.ping(read, "exited", AT, 300.0).status == "idle"  # a stale copy: the write is lost
    assert [a.status for a in area.agent_pools.agents_of("apool-1")] == ["busy"]
    assert table.get("agent-1", "agent")["expires_at"] == 200 + 7 * 24 * 3600  # type: ignore[index]
    won = area.tags.register(RegisteredTag("tag-1", "acme", "prod", AT))
    assert area.tags.register(RegisteredTag("tag-2", "acme", "prod", AT)) == won
    assert area.tags.registered("acme") == {"prod": won} and area.tags.find("tag-1") == won
    area.tags.delete("acme", "prod")
    assert area.tags.registered("acme") == {} and area.tags.find("tag-1") is None


def test_delete_all_of_a_workspace_and_of_an_organization(table: Table) -> None:
    store = _everything(table, "acme", "ws-a1")
    _everything(table, "other", "ws-b2")
    store.run_triggers.add(RunTrigger("rt-1", "acme", "ws-a1", "ws-s", AT), store.run_triggers.sources("ws-a1"))
    store.run_triggers.add(RunTrigger("rt-2", "acme", "ws-t", "ws-a1", AT), store.run_triggers.sources("ws-t"))
    store.delete_all_of(workspace="ws-a1")
    assert store.variables.of_workspace("ws-a1") == [] and store.variables.create(
        _var("var-x", "A", ("workspace_id", "ws-a1"))
    )
    assert store.run_triggers.inbound("ws-a1") == [] and store.run_triggers.outbound("ws-a1") == []
    assert store.run_triggers.sources("ws-a1").version is None and store.run_triggers.sources("ws-t").count == 0
    assert table.get("ws-a1", "autodestroy") is None and store.workspaces.find("ws-a1") is not None  # not the item
    store.delete_all_of(organization="acme")
    assert store.varsets.of_organization("acme") == [] and store.varsets.find_variable("var-sa1") is None
    assert store.varsets.create(VariableSet("varset-n", "acme", "set", "", False, False, (), (), AT, AT, 1), [])
    assert store.ssh_keys.of_organization("acme") == [] and store.agent_pools.of_organization("acme") == []
    assert store.agent_pools.find_agent("agent-a1") is None and store.tags.registered("acme") == {}
    assert store.tags.find("tag-a1") is None
    # the other organization keeps all of it
    assert len(store.varsets.of_organization("other")) == 1 and len(store.ssh_keys.of_organization("other")) == 1
    assert store.agent_pools.find_agent("agent-b2") is not None and "prod" in store.tags.registered("other")
    assert store.variables.of_workspace("ws-b2") != [] and table.get("ws-b2", "autodestroy") is not None
    with pytest.raises(ValueError):
        store.delete_all_of()
