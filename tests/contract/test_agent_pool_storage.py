"""Agent pools on each table implementation (memory, the embedded server's SQLite, DynamoDB on moto): pools and their
allowed workspaces, tokens, agents' registration, pings and exit, and the pool's own job queue partition."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from implementations import IMPLEMENTATIONS, open_table
from terrace.adapters.memory_blobs import MemoryBlobs
from terrace.adapters.table_job_queue import TableJobQueue
from terrace.bootstrap import Container
from terrace.config import Settings
from terrace.domain.agent_pools import queue_key
from terrace.domain.errors import Invalid, NotFound
from terrace.domain.principal import Principal, PrincipalKind


@pytest.fixture(params=IMPLEMENTATIONS)
def container(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Container]:
    with open_table(request.param, tmp_path, lambda: str(request.getfixturevalue("moto_endpoint"))) as table:
        settings = Settings(table_name="t", blob_bucket="b", url_signing_secret="s")
        yield Container(settings=settings, table=table, blobs=MemoryBlobs())


def test_pools_tokens_agents_and_their_queue(container: Container) -> None:
    user = container.accounts.create_user("alice", "alice@example.com")
    me = Principal(PrincipalKind.USER, user.id, user.username)
    container.organizations.create(me, "acme", "ops@example.com")
    ws = container.workspaces.create(me, "acme", {"name": "prod"})
    pool = container.agent_pools.create(me, "acme", {"name": "vpc", "organization-scoped": False},
                                        {"allowed-workspaces": [ws.id]})  # fmt: skip
    with pytest.raises(Invalid):
        container.agent_pools.create(me, "acme", {"name": "vpc"}, {})  # one name per organization
    assert [p.id for p in container.agent_pools.list(me, "acme", allowed_workspace="prod")] == [pool.id]
    bound = container.workspaces.update(me, ws, {"execution-mode": "agent", "agent-pool-id": pool.id})
    assert bound.agent_pool_id == pool.id
    assert [w.id for w in container.agent_pools.workspaces_of(pool)] == [ws.id]

    issued = container.agent_pools.issue_token(me, pool.id, "ci")
    agent_principal = container.accounts.authenticate(issued.secret)
    assert (agent_principal.kind, agent_principal.subject_id) == (PrincipalKind.AGENT, pool.id)
    agent = container.agents.register(agent_principal, "vm-1", "10.0.0.7")
    container.agents.seen(agent_principal, agent.id, "busy")
    (listed,) = container.agent_pools.agents(me, pool.id)
    assert (listed.name, listed.ip_address, listed.status) == ("vm-1", "10.0.0.7", "busy")
    container.agents.exit(agent_principal, agent.id)
    assert container.agent_pools.agent(me, agent.id).status == "exited"

    queue = TableJobQueue(container.table)
    job = {"job_id": "plan-x", "run_id": "run-x", "phase": "plan"}
    queue.enqueue(queue_key("acme", pool.id), "plan", job)
    assert queue.take("acme") is None  # the organization's runners never see it
    taken = queue.take(queue_key("acme", pool.id))
    assert taken is not None and taken.job_id == "plan-x"

    container.agent_pools.revoke_token(me, container.agent_pools.tokens(me, pool.id)[0])
    assert container.agent_pools.tokens(me, pool.id) == []
    container.workspaces.update(me, bound, {"execution-mode": "remote"})
    container.agent_pools.delete(me, pool.id)
    with pytest.raises(NotFound):
        container.agent_pools.get(me, pool.id)
