"""Soak: mixed API traffic on the embedded server (`terrace serve` in its own process) for a long while, its
resources sampled all along.

Full (`make proof`): 30 minutes, 20 clients. Quick (`make test`): 45 seconds, 6 clients.

Traffic, each client in a loop: create a workspace, set a variable, three lock / write state / unlock cycles, read
the current state and its bytes, list the organization's workspaces and the workspace's state versions, delete
the workspace (its versions and blobs go with it). What is created is deleted, so a server that keeps nothing it
should not has nothing to grow with.

Method: after a warm-up (the first fifth of the time: the thread pool, the caches and the SQLite pages reach their
working size), the samples are split into two halves; for the resident memory, the open files, the threads and the
SQLite file, the mean of the second half is within ±10 % of the first's (open files, sockets and threads are small
whole numbers: for them a change of 2 is allowed where 10 % is less; the SQLite file grows by whole checkpoints:
16 pages are allowed where 10 % is less). The WAL file grows between checkpoints and is
never shrunk, so its largest size in each half is compared. The server log must hold no ERROR and no Traceback.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import json
import os
import random
import statistics
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from load_support import FULL, JSONAPI, Server, new_tokens, ratelimit, report, served, sized
from terrace.wiring.embedded_adapters import EMBEDDED_DATABASE

pytestmark = [pytest.mark.proof, pytest.mark.long]

DURATION_S = int(os.environ.get("TERRACE_PROOF_SOAK_S") or sized(45, 1800))  # a shorter full soak when time is short
CLIENTS = sized(6, 20)
SAMPLE_S = sized(1, 10)
WARMUP_SHARE = 0.2
TOLERANCE = 0.10
COUNTS = {"open_files", "sockets", "threads"}  # small whole numbers: ±10 % of 19 threads is less than 2 of them
COUNT_SLACK = sized(4, 2)  # quick: 45 s on a shared machine is too short for the worker pool to settle
# The SQLite file grows only when a checkpoint moves the WAL's pages into it, a few 4 KiB pages at a time: in the
# quick soak it is about 0.15 MiB, where 10 % is three pages, so one checkpoint landing in the second half looks
# like growth. A change of 16 pages is allowed where 10 % is less (the full soak's file is far larger).
FILE_SLACK_MB = {"sqlite_mb": 16 * 4096 / 2**20}
HEADERS = {"Content-Type": JSONAPI}


def sample(server: Server) -> dict[str, float]:
    pid = server.process.pid
    status = Path(f"/proc/{pid}/status").read_text()
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    assert server.data_dir is not None
    database = server.data_dir / EMBEDDED_DATABASE
    targets = []
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        with contextlib.suppress(OSError):  # closed between the listing and the read
            targets.append(os.readlink(fd))
    sockets = sum(1 for target in targets if target.startswith("socket:"))
    return {
        "rss_mb": int(fields["VmRSS"].split()[0]) / 1024,
        "open_files": float(len(targets) - sockets),
        "sockets": float(sockets),
        "threads": float(fields["Threads"].strip()),
        "sqlite_mb": database.stat().st_size / 2**20,
        "wal_mb": _size(database.with_name(database.name + "-wal")) / 2**20,
    }


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def flatness(samples: list[dict[str, float]]) -> dict[str, dict[str, float]]:
    kept = samples[int(len(samples) * WARMUP_SHARE) :]
    first, second = kept[: len(kept) // 2], kept[len(kept) // 2 :]
    found = {}
    for key in samples[0]:
        pick = max if key == "wal_mb" else statistics.fmean
        a, b = pick(s[key] for s in first), pick(s[key] for s in second)
        allowed = max(TOLERANCE, COUNT_SLACK / a) if key in COUNTS and a else TOLERANCE
        if key in FILE_SLACK_MB and a:
            allowed = max(allowed, FILE_SLACK_MB[key] / a)
        found[key] = {"first": a, "second": b, "change": (b - a) / a if a else 0.0, "allowed": allowed}
    return found


async def client_loop(server: Server, token: str, n: int, rng: random.Random, stop_at: float, tally: dict[str, Any]):  # noqa: ANN201
    async with ratelimit.async_client(
        verify=server.ca_bundle,
        base_url=server.url,
        timeout=120,
        headers={"Authorization": f"Bearer {token}", "Accept": JSONAPI},
    ) as api:
        cycle = 0
        while time.monotonic() < stop_at:
            cycle += 1
            try:
                await one_cycle(api, server.organization, f"soak-{n}-{cycle}-{rng.randrange(10**6)}", rng)
                tally["cycles"] += 1
            except (AssertionError, httpx.HTTPError) as exc:
                tally["problems"].append(f"client {n} cycle {cycle}: {exc}")


async def one_cycle(api: httpx.AsyncClient, organization: str, name: str, rng: random.Random) -> None:
    body = {"data": {"type": "workspaces", "attributes": {"name": name, "execution-mode": "local"}}}
    created = await api.post(f"/api/v2/organizations/{organization}/workspaces", json=body, headers=HEADERS)
    assert created.status_code == 201, f"create: {created.status_code} {created.text[:200]}"
    ws = created.json()["data"]["id"]
    variable = {"data": {"type": "vars", "attributes": {"key": "region", "value": "eu", "category": "terraform"}}}
    assert (await api.post(f"/api/v2/workspaces/{ws}/vars", json=variable, headers=HEADERS)).status_code == 201
    lineage = f"soak-{rng.randrange(10**9)}"
    for serial in (1, 2, 3):
        lock = {"data": {"type": "", "attributes": {"reason": "soak"}}}
        assert (await api.post(f"/api/v2/workspaces/{ws}/actions/lock", json=lock, headers=HEADERS)).status_code == 200
        raw = json.dumps({"version": 4, "terraform_version": "1.0.3", "serial": serial, "lineage": lineage,
                          "outputs": {"pad": {"value": "x" * rng.randrange(100, 3000), "type": "string"}},
                          "resources": []}).encode()  # fmt: skip
        attributes = {"serial": serial, "md5": hashlib.md5(raw).hexdigest(), "lineage": lineage,  # noqa: S324
                      "state": base64.b64encode(raw).decode()}  # fmt: skip
        sv = {"data": {"type": "state-versions", "attributes": attributes}}
        written = await api.post(f"/api/v2/workspaces/{ws}/state-versions", json=sv, headers=HEADERS)
        assert written.status_code == 201, f"state: {written.status_code} {written.text[:200]}"
        assert (await api.post(f"/api/v2/workspaces/{ws}/actions/unlock", json={}, headers=HEADERS)).status_code == 200
    current = (await api.get(f"/api/v2/workspaces/{ws}/current-state-version")).raise_for_status().json()
    content = await api.get(current["data"]["attributes"]["hosted-state-download-url"], follow_redirects=True)
    assert hashlib.md5(content.content).hexdigest() == current["data"]["attributes"]["md5"]  # noqa: S324
    (await api.get(f"/api/v2/organizations/{organization}/workspaces", params={"page[size]": 20})).raise_for_status()
    (await api.get(f"/api/v2/workspaces/{ws}/state-versions")).raise_for_status()
    deleted = await api.delete(f"/api/v2/workspaces/{ws}")
    assert deleted.status_code in (200, 204), f"delete: {deleted.status_code} {deleted.text[:200]}"


@pytest.mark.timeout(DURATION_S + 600)
def test_soak_resources_stay_flat_and_the_log_clean(proof_rng: random.Random, proof_seed: int) -> None:
    samples: list[dict[str, float]] = []
    tally: dict[str, Any] = {"cycles": 0, "problems": []}
    with served("embedded") as server:
        tokens = new_tokens(server, max(1, CLIENTS // 4))
        stop = threading.Event()

        def sampler() -> None:
            while not stop.wait(SAMPLE_S):
                samples.append(sample(server))

        thread = threading.Thread(target=sampler, name="soak-sampler", daemon=True)
        thread.start()
        stop_at = time.monotonic() + DURATION_S
        seeds = [proof_rng.randrange(2**32) for _ in range(CLIENTS)]

        async def everyone() -> None:
            await asyncio.gather(
                *(
                    client_loop(server, tokens[n % len(tokens)], n, random.Random(seeds[n]), stop_at, tally)
                    for n in range(CLIENTS)
                )  # fmt: skip
            )

        asyncio.run(everyone())
        stop.set()
        thread.join()
        log = server.log_text()

    bad = [line for line in log.splitlines() if "Traceback" in line or '"ERROR"' in line or " ERROR " in line]
    found = flatness(samples)
    report(
        "soak",
        {
            "command": f"TERRACE_PROOF={'full' if FULL else 'quick'} pytest tests/proof/test_soak.py",
            "seed": proof_seed,
            "duration_s": DURATION_S,
            "clients": CLIENTS,
            "cycles": tally["cycles"],
            "samples": len(samples),
            "flatness": found,
            "first_sample": samples[0],
            "last_sample": samples[-1],
            "peak": {key: max(s[key] for s in samples) for key in samples[0]},
            "problems": len(tally["problems"]),
            "log_errors": len(bad),
        },
    )
    assert not tally["problems"], "\n".join(tally["problems"][:20])
    assert not bad, "\n".join(bad[:20])
    drifted = {key: f"{v['change']:+.1%}" for key, v in found.items() if abs(v["change"]) > v["allowed"]}
    assert not drifted, f"not flat within ±{TOLERANCE:.0%} after warm-up: {drifted} ({found})"
