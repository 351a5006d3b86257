"""Concurrent state clients (the calls of terraform's `remote` backend, 1.0.3): each loops, for the scenario's
duration, over a random workspace: either a write cycle (lock, read the current version, write serial + 1 inline,
unlock; a refused lock backs off and asks again, as `-lock-timeout` does) or a read (the current version, then its
bytes from `hosted-state-download-url`, with the token, redirected to the signed blob URL), checked against the
MD5 its writer computed.

Every write is recorded before it is sent (what a read may legitimately see) and when acknowledged (what must never
be lost); `verify` then checks each workspace's history against them.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import random
import time
import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import httpx
from load_support import ratelimit

JSONAPI = {"Content-Type": "application/vnd.api+json"}
LOCK_BODY = {"data": {"type": "", "attributes": {"reason": "proof"}}}


@dataclass
class Ack:
    workspace: str
    serial: int
    md5: str
    version_id: str
    at: float


@dataclass
class Tally:
    intents: dict[tuple[str, int], str] = field(default_factory=dict)  # (workspace, serial) -> md5 sent
    payloads: list[tuple[str, int, bytes]] = field(default_factory=list)
    acks: list[Ack] = field(default_factory=list)
    write_s: list[float] = field(default_factory=list)  # the state POST of each acknowledged write
    cycle_s: list[float] = field(default_factory=list)  # lock to unlock, refusals excluded
    read_s: list[float] = field(default_factory=list)  # current version + download
    refused_locks: int = 0
    reads_checked: int = 0
    problems: list[str] = field(default_factory=list)  # unexpected statuses, wrong bytes
    rate_limit: ratelimit.RateLimitStats = field(default_factory=ratelimit.RateLimitStats)


def state_bytes(serial: int, lineage: str, client: int, size: int) -> bytes:
    return json.dumps(
        {
            "version": 4,
            "terraform_version": "1.0.3",
            "serial": serial,
            "lineage": lineage,
            "outputs": {
                "writer": {"value": f"client-{client}", "type": "string"},
                "pad": {"value": "x" * size, "type": "string"},
            },
            "resources": [],
        }  # fmt: skip
    ).encode()


class StateClients:
    def __init__(
        self,
        url: str,
        ca_bundle: str,
        tokens: list[str],
        workspaces: dict[str, str],  # id -> lineage
        rng: random.Random,
        *,
        write_share: float = 0.5,
    ) -> None:
        self.url, self.ca_bundle, self.tokens = url, ca_bundle, tokens
        self.workspaces, self.rng, self.write_share = workspaces, rng, write_share
        self.tally = Tally()
        self.elapsed_s = 0.0

    def _client(self, token: str) -> httpx.AsyncClient:
        return ratelimit.async_client(
            verify=self.ca_bundle,
            stats=self.tally.rate_limit,
            base_url=self.url,
            timeout=120,
            headers={"Authorization": f"Bearer {token}", "Accept": "application/vnd.api+json"},
        )

    async def run(self, clients: int, duration_s: float) -> Tally:
        began = time.monotonic()
        stop_at = began + duration_s
        seeds = [self.rng.randrange(2**32) for _ in range(clients)]
        await asyncio.gather(*(self._one(n, random.Random(seeds[n]), stop_at) for n in range(clients)))
        self.elapsed_s = time.monotonic() - began
        return self.tally

    async def _one(self, n: int, rng: random.Random, stop_at: float) -> None:
        ids = sorted(self.workspaces)
        async with self._client(self.tokens[n % len(self.tokens)]) as api:
            await asyncio.sleep(rng.uniform(0, 0.5))  # clients start spread, not in one burst
            while time.monotonic() < stop_at:
                ws = rng.choice(ids)
                try:
                    if rng.random() < self.write_share:
                        await self._write_cycle(api, ws, n, rng, stop_at)
                    else:
                        await self._read(api, ws)
                except httpx.HTTPError as exc:
                    self.tally.problems.append(f"client {n}: {type(exc).__name__}: {exc}")

    def _unexpected(self, what: str, response: httpx.Response) -> None:
        self.tally.problems.append(f"{what}: {response.status_code} {response.text[:300]}")

    async def _write_cycle(self, api: httpx.AsyncClient, ws: str, n: int, rng: random.Random, stop_at: float) -> None:
        backoff = 0.05
        while True:
            locked = await api.post(f"/api/v2/workspaces/{ws}/actions/lock", json=LOCK_BODY, headers=JSONAPI)
            if locked.status_code == 200:
                break
            if locked.status_code != 409:
                return self._unexpected("lock", locked)
            self.tally.refused_locks += 1
            if time.monotonic() > stop_at:
                return None
            await asyncio.sleep(rng.uniform(backoff / 2, backoff))
            backoff = min(1.0, backoff * 2)
        began = time.perf_counter()
        try:
            current = await api.get(f"/api/v2/workspaces/{ws}/current-state-version")
            if current.status_code not in (200, 404):
                return self._unexpected("current version", current)
            serial = current.json()["data"]["attributes"]["serial"] + 1 if current.status_code == 200 else 1
            raw = state_bytes(serial, self.workspaces[ws], n, rng.randrange(200, 4000))
            md5 = hashlib.md5(raw).hexdigest()  # noqa: S324 - the protocol's checksum
            self.tally.intents[(ws, serial)] = md5
            attributes = {
                "serial": serial,
                "md5": md5,
                "lineage": self.workspaces[ws],
                "state": base64.b64encode(raw).decode(),
            }
            sent = time.perf_counter()
            written = await api.post(
                f"/api/v2/workspaces/{ws}/state-versions",
                json={"data": {"type": "state-versions", "attributes": attributes}},
                headers=JSONAPI,
            )
            if written.status_code != 201:
                return self._unexpected(f"state write {ws}#{serial}", written)
            self.tally.write_s.append(time.perf_counter() - sent)
            self.tally.acks.append(Ack(ws, serial, md5, written.json()["data"]["id"], time.monotonic()))
            self.tally.payloads.append((ws, serial, raw))
        finally:
            unlocked = await api.post(f"/api/v2/workspaces/{ws}/actions/unlock", json={}, headers=JSONAPI)
            if unlocked.status_code != 200:
                self._unexpected("unlock", unlocked)
        self.tally.cycle_s.append(time.perf_counter() - began)
        return None

    async def _read(self, api: httpx.AsyncClient, ws: str) -> None:
        began = time.perf_counter()
        current = await api.get(f"/api/v2/workspaces/{ws}/current-state-version")
        if current.status_code == 404:
            return
        if current.status_code != 200:
            return self._unexpected("read current", current)
        attributes = current.json()["data"]["attributes"]
        body = await api.get(attributes["hosted-state-download-url"], follow_redirects=True)
        if body.status_code != 200:
            return self._unexpected("download", body)
        self.tally.read_s.append(time.perf_counter() - began)
        self._check_bytes(ws, attributes["serial"], body.content, "read")
        return None

    def _check_bytes(self, ws: str, serial: int, content: bytes, what: str) -> None:
        self.tally.reads_checked += 1
        md5 = hashlib.md5(content).hexdigest()  # noqa: S324
        if self.tally.intents.get((ws, serial)) != md5:
            self.tally.problems.append(f"{what} {ws}#{serial}: md5 {md5}, sent {self.tally.intents.get((ws, serial))}")


async def _history(api: httpx.AsyncClient, ws: str) -> list[dict[str, Any]]:
    versions: list[dict[str, Any]] = []
    page = 1
    while page:
        params = {"page[number]": page, "page[size]": 100}
        listed = (await api.get(f"/api/v2/workspaces/{ws}/state-versions", params=params)).raise_for_status()
        versions.extend(listed.json()["data"])
        page = listed.json().get("meta", {}).get("pagination", {}).get("next-page") or 0
    return versions


async def verify(clients: StateClients, token: str) -> list[str]:
    """Every acknowledged write is in its workspace's history with its serial and MD5, its bytes intact; the history
    holds each serial once, newest first in strictly falling serials, and in the order the writes were acknowledged."""
    tally, problems = clients.tally, []
    acked: dict[str, list[Ack]] = defaultdict(list)
    for ack in sorted(tally.acks, key=lambda a: a.at):
        acked[ack.workspace].append(ack)
    gate = asyncio.Semaphore(20)
    async with clients._client(token) as api:

        async def one(ws: str) -> None:
            async with gate:
                history = await _history(api, ws)
            serials = [v["attributes"]["serial"] for v in history]
            if serials != sorted(set(serials), reverse=True):
                problems.append(f"{ws}: history out of order or repeated: {serials[:20]}")
            by_serial = {v["attributes"]["serial"]: v for v in history}
            order = [a.serial for a in acked[ws]]
            if order != sorted(order):
                problems.append(f"{ws}: acknowledged out of serial order: {order[:20]}")
            for ack in acked[ws]:
                found = by_serial.get(ack.serial)
                if found is None or found["id"] != ack.version_id or found["attributes"]["md5"] != ack.md5:
                    problems.append(f"{ws}#{ack.serial}: acknowledged as {ack.version_id}, history has {found}")
                    continue
                async with gate:
                    body = await api.get(found["attributes"]["hosted-state-download-url"], follow_redirects=True)
                if body.status_code != 200:
                    problems.append(f"{ws}#{ack.serial}: download {body.status_code}")
                else:
                    clients._check_bytes(ws, ack.serial, body.content, "history")
            extra = set(by_serial) - {a.serial for a in acked[ws]}
            if extra:
                problems.append(f"{ws}: versions nobody was told were written: {sorted(extra)}")

        await asyncio.gather(*(one(ws) for ws in clients.workspaces))
    return problems + tally.problems


def new_lineage() -> str:
    return str(uuid.uuid4())
