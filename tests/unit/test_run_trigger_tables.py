"""Run triggers' rows on each table (in-memory, the embedded server's SQLite, DynamoDB on moto): the trigger, the
source's link and the target's versioned count are written in one transaction; a duplicate and a 21st source are
refused whatever the table, and deletion leaves none of the three rows behind."""

from __future__ import annotations

import pytest
from terrace.adapters.memory_blobs import MemoryBlobs
from terrace.adapters.table import Table
from terrace.bootstrap import Container
from terrace.config import Settings
from terrace.domain.errors import Invalid
from terrace.domain.principal import PrincipalKind
from terrace.services.access.accounts import AccountService


def test_triggers_limit_and_removal_on_each_table(table: Table) -> None:
    settings = Settings(table_name="t", blob_bucket="b", url_signing_secret="s")
    container = Container(settings=settings, table=table, blobs=MemoryBlobs())
    accounts: AccountService = container.accounts
    alice = accounts.create_user("alice")
    principal = accounts.authenticate(accounts.issue_token(PrincipalKind.USER, alice.id).secret)
    container.organizations.create(principal, "acme", "a@example.com")
    made = [container.workspaces.create(principal, "acme", {"name": f"w{i}"}) for i in range(22)]
    target, sources = made[0], made[1:]

    for source in sources[:20]:
        container.run_triggers.create(principal, target.id, source.id)
    with pytest.raises(Invalid, match="already a source"):
        container.run_triggers.create(principal, target.id, sources[0].id)
    with pytest.raises(Invalid, match="20 source workspaces"):
        container.run_triggers.create(principal, target.id, sources[20].id)
    inbound = container.run_triggers.list(principal, target.id, "inbound")
    assert sorted(v.sourceable.id for v in inbound) == sorted(s.id for s in sources[:20])
    assert [t.workspace_id for t in container.run_triggers.outbound(sources[3].id)] == [target.id]
    assert table.get(f"{target.id}#run-trigger-sources", "count")["count"] == 20  # type: ignore[index]

    container.run_triggers.delete(principal, inbound[0].trigger.id)
    container.run_triggers.create(principal, target.id, sources[20].id)
    container.workspace_store.delete_all_of(workspace=target.id)  # the purge of a deleted workspace
    assert container.run_triggers.inbound(target.id) == []
    assert all(container.run_triggers.outbound(s.id) == [] for s in sources)
    assert table.get(f"{target.id}#run-trigger-sources", "count") is None
    assert all(table.get(v.trigger.id, "rt") is None for v in inbound)
