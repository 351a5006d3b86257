"""Variable sets on each table (in-memory, the embedded server's SQLite, DynamoDB on moto): a set with its
variables and attachments is written in one transaction or not at all; two callers applying the same set at
once both land (the loser re-reads and re-applies); names are unique per organization across renames; a run
resolves through the same reads; and deleting the organization leaves no item of a set behind."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from terrace.adapters.memory_blobs import MemoryBlobs
from terrace.adapters.table import Table, WriteOp
from terrace.bootstrap import Container
from terrace.config import Settings
from terrace.domain.errors import Invalid, NotFound
from terrace.domain.principal import Principal, PrincipalKind


class Meanwhile:
    """Delegates to `inner`; before the next transaction that writes a variable set, runs `meanwhile()` once."""

    def __init__(self, inner: Table) -> None:
        self.inner = inner
        self.meanwhile: Any = None

    def transact(self, ops: Sequence[WriteOp]) -> None:
        if self.meanwhile is not None and any(getattr(op, "item", {}).get("sk") == "varset" for op in ops):
            meanwhile, self.meanwhile = self.meanwhile, None
            meanwhile()
        self.inner.transact(ops)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


@pytest.fixture
def world(table: Table) -> tuple[Container, Principal, Meanwhile]:
    """A container on `table` (conftest: each implementation), wrapped to act between a read and its write."""
    wrapped = Meanwhile(table)
    settings = Settings(table_name="t", blob_bucket="b", url_signing_secret="s")
    container = Container(settings=settings, table=wrapped, blobs=MemoryBlobs())  # type: ignore[arg-type]
    user = container.accounts.create_user("alice", "alice@example.com")
    owner = Principal(PrincipalKind.USER, user.id, user.username)
    container.organizations.create(owner, "acme", "ops@example.com")
    return container, owner, wrapped


def test_sets_on_each_table(world: tuple[Container, Principal, Meanwhile]) -> None:
    c, owner, table = world
    a = c.workspaces.create(owner, "acme", {"name": "a", "execution-mode": "remote"})
    b = c.workspaces.create(owner, "acme", {"name": "b", "execution-mode": "remote"})
    org_key = c.organizations.lookup("acme").key
    secret = {"key": "token", "value": "t0p-secret", "category": "env", "sensitive": True}
    region = {"key": "region", "value": "eu", "category": "terraform"}
    # nothing half-written: a duplicate variable or an unknown workspace refuses the whole set
    with pytest.raises(Invalid):
        c.set_variables.create_set(owner, "acme", {"name": "s"}, [a.id], [], [region, region])
    with pytest.raises(NotFound):
        c.set_variables.create_set(owner, "acme", {"name": "s"}, [a.id, "ws-doesnotexist1234"], [], [region])
    assert c.varsets.all_in(org_key) == []
    vs = c.set_variables.create_set(owner, "acme", {"name": "s"}, [a.id], [], [region, secret])
    stored = c.table.query(f"{vs.id}#vars", index="gsi1")
    assert len(stored) == 2 and "t0p-secret" not in repr(stored)
    # two appliers at once: the second lands while the first is deciding; both are applied
    other = c.set_variables.create_set(owner, "acme", {"name": "t"}, [], [], [])
    table.meanwhile = lambda: c.varsets.apply(owner, vs.id, "workspaces", [b.id], add=True)
    c.varsets.apply(owner, vs.id, "projects", [b.project_id or c.projects.list(owner, "acme")[0].id], add=True)
    assert c.varsets.load(vs.id).workspace_ids == (a.id, b.id) and len(c.varsets.load(vs.id).project_ids) == 1
    # names: unique, and a rename frees the old one
    with pytest.raises(Invalid):
        c.varsets.update(owner, other.id, {"name": "s"})
    c.varsets.update(owner, vs.id, {"name": "renamed"})
    c.varsets.update(owner, other.id, {"name": "s"})
    assert [s.name for s in c.varsets.all_in(org_key)] == ["renamed", "s"]
    # what a run of `b` records, through the same reads
    recorded = c.effective_variables.resolve_for_run(c.workspaces.load(b.id), [{"key": "region", "value": '"x"'}])
    assert {e["key"]: e["source"]["type"] for e in recorded} == {"region": "runs", "token": "varsets"}
    assert "t0p-secret" not in repr(recorded)
    # the organization's deletion leaves none of it
    c.organization_deletion.delete(owner, "acme")
    assert c.table.query(f"org#{org_key}#varsets", index="gsi1") == []
    assert c.table.query(f"{vs.id}#vars", index="gsi1") == [] and c.table.query(f"{vs.id}#varkeys") == []
    assert c.table.get(vs.id, "varset") is None
