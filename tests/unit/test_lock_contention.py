"""Lock contention stays cheap: a refused lock costs one read of the workspace and writes nothing."""

from __future__ import annotations

import base64
import dataclasses
import json
from collections import Counter
from collections.abc import Sequence
from typing import Any

import pytest
from fastapi.testclient import TestClient
from table_writes import WRITE_METHODS, audit_event
from terrace.adapters.memory_blobs import MemoryBlobs
from terrace.adapters.memory_table import MemoryTable
from terrace.adapters.table import ConditionFailed, Delete, Put, WriteOp
from terrace.bootstrap import Container
from terrace.config import Settings
from terrace.domain.errors import Locked
from terrace.domain.principal import Principal, PrincipalKind
from terrace.domain.workspace import WorkspaceLock
from terrace.web.app import create_app


class CountingTable(MemoryTable):
    """The memory table, counting every operation by kind and every `get` by partition key."""

    def __init__(self) -> None:
        super().__init__()
        self.ops: Counter[str] = Counter()
        self.gets: Counter[str] = Counter()

    def reset(self) -> None:
        self.ops.clear()
        self.gets.clear()

    def get(self, pk: str, sk: str) -> Any:
        self.ops["get"] += 1
        self.gets[pk] += 1
        return super().get(pk, sk)

    def batch_get(self, keys: Sequence[tuple[str, str]]) -> Any:
        self.ops["batch_get"] += 1
        return super().batch_get(keys)

    def put(self, item: Any, *, if_absent: bool = False, if_version: int | None = None) -> None:
        self.ops["put"] += 0 if audit_event(item) else 1  # a request's audit event is not the lock's
        MemoryTable.transact(self, [Put(item, if_absent=if_absent, if_version=if_version)])  # one op, not two

    def delete(self, pk: str, sk: str, *, if_version: int | None = None) -> None:
        self.ops["delete"] += 1
        MemoryTable.transact(self, [Delete(pk, sk, if_version=if_version)])

    def query(self, *args: Any, **kwargs: Any) -> Any:
        self.ops["query"] += 1
        return super().query(*args, **kwargs)

    def transact(self, ops: Sequence[WriteOp]) -> None:
        self.ops["transact"] += 1
        super().transact(ops)


class Setup:
    def __init__(self) -> None:
        self.table = CountingTable()
        settings = Settings(table_name="memory", blob_bucket="memory", url_signing_secret="s")
        self.container = Container(settings=settings, table=self.table, blobs=MemoryBlobs())
        c = self.container
        holder = c.accounts.create_user("holder", "h@example.com")
        principal = Principal(PrincipalKind.USER, holder.id, holder.username)
        c.organizations.create(principal, "acme", "ops@example.com")
        self.ws = c.workspaces.create(principal, "acme", {"name": "prod", "execution-mode": "local"})
        self.holder_token = c.accounts.issue_token(PrincipalKind.USER, holder.id).secret
        self.poller_token = c.accounts.issue_token(PrincipalKind.USER, holder.id).secret  # another client
        for token in (self.holder_token, self.poller_token):  # clients already at work: their tokens' last use is
            c.accounts.authenticate(token)  # recorded (a write at most once per period), not by the polls counted
        self.client = TestClient(create_app(c))

    def tfc_lock(self, token: str) -> Any:
        return self.client.post(
            f"/api/v2/workspaces/{self.ws.id}/actions/lock",
            headers={"Authorization": f"Bearer {token}", "Content-Type": "application/vnd.api+json"},
            json={"reason": "polling"},
        )

    def http_lock(self, lock_id: str) -> Any:
        auth = base64.b64encode(f"x:{self.holder_token}".encode()).decode()
        info = {"ID": lock_id, "Operation": "OperationTypeApply", "Who": "ci@runner", "Version": "1.0.3"}
        return self.client.request(
            "LOCK", "/state/v1/acme/prod", headers={"Authorization": f"Basic {auth}"}, content=json.dumps(info)
        )


def test_a_refused_tfc_lock_is_one_workspace_read_and_no_write() -> None:
    env = Setup()
    assert env.tfc_lock(env.holder_token).status_code == 200
    env.table.reset()

    refused = env.tfc_lock(env.poller_token)

    assert refused.status_code == 409 and "already locked" in refused.text
    assert not [op for op in WRITE_METHODS if env.table.ops[op]], env.table.ops
    assert env.table.gets[env.ws.id] == 1, env.table.gets  # the workspace, read once
    assert env.table.ops["query"] == 0 and env.table.ops["batch_get"] == 0, env.table.ops


def test_a_refused_http_backend_lock_is_one_workspace_read_and_no_write() -> None:
    env = Setup()
    assert env.http_lock("lock-holder").status_code == 200
    env.table.reset()

    refused = env.http_lock("lock-poller")

    assert refused.status_code == 423 and refused.json()["ID"] == "lock-holder"
    assert not [op for op in WRITE_METHODS if env.table.ops[op]], env.table.ops
    assert env.table.gets[env.ws.id] == 1, env.table.gets


def test_a_free_lock_is_one_conditional_write_and_a_lost_race_re_decides() -> None:
    env = Setup()
    env.table.reset()
    assert env.tfc_lock(env.holder_token).status_code == 200
    assert env.table.ops["put"] == 1 and env.table.ops["transact"] == 0, env.table.ops  # one conditional write
    # the lock's read only: the audit event's organization is the one the Authorizer decided the lock in
    assert env.table.gets[env.ws.id] == 1, env.table.gets
    env.table.reset()
    assert env.tfc_lock(env.holder_token).status_code in (200, 409)
    assert env.table.gets[env.ws.id] == 1, env.table.gets
    env.client.post(
        f"/api/v2/workspaces/{env.ws.id}/actions/unlock", headers={"Authorization": f"Bearer {env.holder_token}"}
    )

    # a competitor takes the lock between our read and our write: the conditional write fails, the re-read refuses
    env.client.post(
        f"/api/v2/workspaces/{env.ws.id}/actions/unlock", headers={"Authorization": f"Bearer {env.holder_token}"}
    )
    loaded = env.container.workspaces.load(env.ws.id)
    competitor = Principal(PrincipalKind.USER, "user-competitor", "competitor")
    taken = WorkspaceLock(
        holder=competitor.lock_holder, username="competitor", reason="", created_at="2026-01-01T00:00:00Z"
    )
    env.container.workspaces.write_if_unchanged(loaded, dataclasses.replace(loaded, lock=taken))
    holder = env.container.accounts.authenticate(env.holder_token)
    with pytest.raises(Locked, match="competitor"):
        env.container.locks.lock(holder, loaded, "late")  # `loaded` is stale: it looked free
    with pytest.raises(ConditionFailed):
        env.container.workspaces.write_if_unchanged(loaded, loaded)
