"""Builders for state-capability tests: a user, an organization, a workspace, and state bodies."""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from event_loops import served
from fastapi.testclient import TestClient
from table_items import memory_items
from table_writes import audit_event
from terrace.bootstrap import Container, build_embedded, build_memory
from terrace.config import Settings
from terrace.domain.principal import Principal, PrincipalKind
from terrace.services.events import landed_event
from terrace.web.app import create_app

LINEAGE = "5f8e3c1a-0000-4000-8000-000000000001"


def state_bytes(
    serial: int,
    lineage: str = LINEAGE,
    *,
    outputs: dict[str, Any] | None = None,
    resources: list[dict[str, Any]] | None = None,
) -> bytes:
    doc = {
        "version": 4,
        "terraform_version": "1.0.3",
        "serial": serial,
        "lineage": lineage,
        "outputs": outputs or {},
        "resources": resources or [],
    }
    return json.dumps(doc, indent=2).encode()


def null_resource(name: str, rid: str, module: str | None = None, count: int | None = None) -> dict[str, Any]:
    res: dict[str, Any] = {
        "mode": "managed",
        "type": "null_resource",
        "name": name,
        "provider": 'provider["registry.terraform.io/hashicorp/null"]',
        "instances": [
            {
                "schema_version": 0,
                "attributes": {"id": f"{rid}{i}" if count else rid, "triggers": None},
                **({"index_key": i} if count else {}),
            }
            for i in range(count or 1)
        ],
    }
    if module:
        res["module"] = module
    return res


def md5(raw: bytes) -> str:
    return hashlib.md5(raw).hexdigest()


def sv_body(
    raw: bytes | None,
    serial: int,
    *,
    lineage: str | None = LINEAGE,
    md5_hex: str | None = None,
    force: bool = False,
    **extra: Any,
) -> dict[str, Any]:
    attrs: dict[str, Any] = {"serial": serial, "md5": md5_hex or md5(raw or b""), "force": force, **extra}
    if lineage:
        attrs["lineage"] = lineage
    if raw is not None:
        attrs["state"] = base64.b64encode(raw).decode()
    return {"data": {"type": "state-versions", "attributes": attrs}}


@dataclass
class Env:
    container: Container
    client: TestClient
    org: str
    ws_id: str
    token: str
    principal: Principal

    @property
    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}", "Content-Type": "application/vnd.api+json"}

    def lock(self, ws_id: str | None = None, token: str | None = None) -> None:
        headers = {**self.auth, "Authorization": f"Bearer {token or self.token}"}
        r = self.client.post(
            f"/api/v2/workspaces/{ws_id or self.ws_id}/actions/lock", headers=headers, json={"reason": "test"}
        )
        assert r.status_code == 200, r.text

    def push(self, raw: bytes | None, serial: int, ws_id: str | None = None, **kw: Any) -> Any:
        return self.client.post(
            f"/api/v2/workspaces/{ws_id or self.ws_id}/state-versions",
            headers=self.auth,
            json=sv_body(raw, serial, **kw),
        )

    def land(self, key: str, data: bytes) -> None:
        """A client's PUT to an upload URL of the memory blob store, then the `blob.landed` event the events worker
        handles (S3's event notification; the embedded blob server hands it over in the PUT itself)."""
        self.container.blobs.put(key, data)
        self.container.events.handle(landed_event(key))

    def drain_events(self) -> list[dict[str, Any]]:
        """Hand every published event to the events service (what the events worker does); returns them."""
        published = self.container.publisher.events  # type: ignore[attr-defined]
        handled = []
        while published:
            event = published.pop(0)
            self.container.events.handle(event)
            handled.append(event)
        return handled

    def ws(self, ws_id: str | None = None) -> Any:
        return self.container.workspaces.load(ws_id or self.ws_id)

    def new_workspace(self, name: str, org: str | None = None, principal: Principal | None = None) -> str:
        return self.container.workspaces.create(principal or self.principal, org or self.org, {"name": name}).id

    def stored(self) -> tuple[Any, ...]:
        """A snapshot of everything the state capability stores, to prove a refusal changed nothing."""
        items = sorted(repr(v) for v in memory_items(self.container.table).values() if not audit_event(v))
        blobs = sorted(self.container.blobs.objects.items())  # type: ignore[attr-defined]
        return tuple(items), tuple(blobs)


def make_env(settings: Settings | None = None, org: str = "acme") -> Env:
    container = build_memory(settings)
    user = container.accounts.create_user("alice", "alice@example.com")
    principal = Principal(PrincipalKind.USER, user.id, user.username)
    container.organizations.create(principal, org, "ops@example.com")
    ws = container.workspaces.create(principal, org, {"name": "prod", "execution-mode": "local"})
    issued = container.accounts.issue_token(PrincipalKind.USER, user.id)
    # its first use is recorded now (`last_used_at`, then at most once per period): the snapshots of tests that
    # check a refused request wrote nothing see no write of this bookkeeping
    container.accounts.authenticate(issued.secret)
    return Env(container, served(TestClient(create_app(container))), org, ws.id, issued.secret, principal)


def other_user(env: Env, name: str = "mallory", org: str = "evil") -> tuple[str, Principal]:
    """A second user who owns another organization; returns (token, principal)."""
    user = env.container.accounts.create_user(name)
    principal = Principal(PrincipalKind.USER, user.id, user.username)
    env.container.organizations.create(principal, org, f"{name}@example.com")
    secret = env.container.accounts.issue_token(PrincipalKind.USER, user.id).secret
    env.container.accounts.authenticate(secret)  # its first use recorded now, as make_env's token
    return secret, principal


@contextmanager
def embedded_env(data_dir: Path, execution_mode: str, **settings: Any) -> Iterator[Env]:
    """A user `alice` owning organization `acme` and workspace `prod`, on the embedded server's adapters (SQLite,
    files and its blob URLs) in `data_dir`, served in-process."""
    container = build_embedded(
        Settings(
            table_name="embedded",
            blob_bucket="embedded",
            data_dir=str(data_dir),
            public_url="https://testserver",
            **settings,
        )
    )
    try:
        user = container.accounts.create_user("alice", "alice@example.com")
        principal = Principal(PrincipalKind.USER, user.id, user.username)
        container.organizations.create(principal, "acme", "ops@example.com")
        ws = container.workspaces.create(principal, "acme", {"name": "prod", "execution-mode": execution_mode})
        token = container.accounts.issue_token(PrincipalKind.USER, user.id).secret
        with TestClient(create_app(container)) as client:
            yield Env(container, client, "acme", ws.id, token, principal)
    finally:
        container.close()


def blob_url_path(url: str) -> str:
    """The path (and query) of a blob URL, for the in-process client."""
    return "/" + url.split("://", 1)[1].split("/", 1)[1]
