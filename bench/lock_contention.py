"""Lock contention: one holder cycles lock -> state write -> unlock on a workspace while N contenders poll
its lock (1, 5, 50). Reports the holder's state writes per second and the ratio to the 1-contender figure.

Clients are Terraform 1.0.3's `remote` backend calls over the TFC API: POST .../actions/lock (a contender
that gets the lock releases it at once, as a quick plan would), POST .../state-versions with the state
inline, POST .../actions/unlock. Pollers ask once a second each, spread over the second, from a child
process (their client work stays off the in-process server's CPU share). Besides writes/s, the holder's time
is split into lock acquisition (it competes with the pollers for the free lock) and write + unlock (which
pollers must not starve). A refused lock should cost the server one read of the workspace (plus the token
lookup every request makes) and no write.
"""

from __future__ import annotations

import base64
import hashlib
import json
import multiprocessing
import random
import ssl
import threading
import time
import uuid
from typing import Any

import httpx

from bench import ratelimit
from bench.api_latency import READS, Recorder
from bench.common import Api, Outcome, Size, local_stack, median, unique

LEVELS = (1, 5, 50)
POLL_INTERVAL_S = 1.0  # each contender asks once a second (terraform -lock-timeout starts at 1 s, then backs off)
HOLDER_RETRY_S = 0.02  # the holder retries a refused lock quickly


def _lock(http: httpx.Client, ws_id: str) -> bool:
    response = http.post(
        f"/api/v2/workspaces/{ws_id}/actions/lock",
        json={"data": {"type": "", "attributes": {"reason": "bench"}}},
        headers={"Content-Type": "application/vnd.api+json"},
    )
    if response.status_code not in (200, 409, 423):
        raise RuntimeError(f"lock: {response.status_code} {response.text[:300]}")
    return response.status_code == 200


def _write_state(http: httpx.Client, ws_id: str, serial: int, lineage: str) -> None:
    raw = json.dumps(
        {
            "version": 4,
            "terraform_version": "1.0.3",
            "serial": serial,
            "lineage": lineage,
            "outputs": {},
            "resources": [],
        }
    ).encode()
    attributes = {
        "serial": serial,
        "md5": hashlib.md5(raw).hexdigest(),  # noqa: S324 - the protocol's checksum
        "lineage": lineage,
        "state": base64.b64encode(raw).decode(),
    }
    response = http.post(
        f"/api/v2/workspaces/{ws_id}/state-versions",
        json={"data": {"type": "state-versions", "attributes": attributes}},
        headers={"Content-Type": "application/vnd.api+json"},
    )
    if response.status_code != 201:
        raise RuntimeError(f"state write: {response.status_code} {response.text[:300]}")


def _client(url: str, token: str, ca_bundle: str) -> httpx.Client:
    return ratelimit.client(
        base_url=url,
        verify=ssl.create_default_context(cafile=ca_bundle),
        timeout=120,
        headers={"Authorization": f"Bearer {token}", "Accept": "application/vnd.api+json"},
    )


POLLERS_PER_TOKEN = 20  # 20 requests per second per token: under TFC's 30 (a 429 is honoured anyway)


def poll(url: str, tokens: list[str], ca_bundle: str, ws_id: str, contenders: int, run_s: float, results: Any) -> None:
    """`contenders` pollers for `run_s` seconds (in a child process: their client work stays off the server's
    CPU share, as on real machines), POLLERS_PER_TOKEN per token; puts (refused, won, errors) on `results`."""
    stop = threading.Event()
    counts = {"refused": 0, "won": 0, "errors": 0}
    guard = threading.Lock()

    def contender(token: str) -> None:
        http = _client(url, token, ca_bundle)
        try:
            stop.wait(random.uniform(0, POLL_INTERVAL_S))  # pollers spread over the interval, not in bursts
            while not stop.wait(POLL_INTERVAL_S):
                won = _lock(http, ws_id)
                if won:
                    http.post(f"/api/v2/workspaces/{ws_id}/actions/unlock")
                with guard:
                    counts["won" if won else "refused"] += 1
        except Exception:  # noqa: BLE001 - counted and reported by the parent
            with guard:
                counts["errors"] += 1
        finally:
            http.close()

    threads = [threading.Thread(target=contender, args=(tokens[n // POLLERS_PER_TOKEN],)) for n in range(contenders)]
    for thread in threads:
        thread.start()
    time.sleep(run_s)
    stop.set()
    for thread in threads:
        thread.join(120)
    results.put(counts)


def measure(
    stack: Any, contenders: int, duration_s: float, warmup_s: float = 2 * POLL_INTERVAL_S + 1
) -> dict[str, float]:
    """One holder (in this process, next to the server) and `contenders` pollers on a fresh workspace; the pollers
    are under way for `warmup_s` before the clock starts."""
    api = Api(stack)
    ws_id = api.create_workspace(unique("contended"), **{"execution-mode": "local"})["id"]
    tokens = [api.new_token("lock contender") for _ in range(-(-contenders // POLLERS_PER_TOKEN))]
    api.close()
    warmup = warmup_s
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    child = context.Process(
        target=poll, args=(stack.url, tokens, stack.ca_bundle, ws_id, contenders, warmup + duration_s, results)
    )
    child.start()
    time.sleep(warmup)
    http, lineage, writes = _client(stack.url, stack.token, stack.ca_bundle), str(uuid.uuid4()), 0
    acquiring: list[float] = []  # per cycle: until the lock was ours (refusals and retries included)
    holding: list[float] = []  # per cycle: state write + unlock, what pollers must not starve
    start = time.perf_counter()
    try:
        while time.perf_counter() - start < duration_s:
            began = time.perf_counter()
            while not _lock(http, ws_id):
                time.sleep(HOLDER_RETRY_S)
            locked = time.perf_counter()
            _write_state(http, ws_id, writes + 1, lineage)
            http.post(f"/api/v2/workspaces/{ws_id}/actions/unlock").raise_for_status()
            acquiring.append(locked - began)
            holding.append(time.perf_counter() - locked)
            writes += 1
        elapsed = time.perf_counter() - start
    finally:
        http.close()
        counts = results.get(timeout=300)
        child.join(60)
    if counts["errors"]:
        raise RuntimeError(f"{counts['errors']} of {contenders} pollers failed")
    return {
        "holder_writes_per_s": writes / elapsed,
        "acquire_p50_s": median(acquiring),
        "write_and_unlock_p50_s": median(holding),
        "contender_requests_per_s": (counts["refused"] + counts["won"]) / (warmup + duration_s),
        "refused": counts["refused"],
        "won": counts["won"],
        "elapsed_s": elapsed,
    }


def refused_lock_calls(stack: Any) -> list[str]:
    """The DynamoDB calls of one refused lock, recorded on the API's own client."""
    api = Api(stack)
    ws_id = api.create_workspace(unique("refused"), **{"execution-mode": "local"})["id"]
    api.lock(ws_id)
    other = Api(stack)
    try:
        recorder = Recorder(stack.local.container.table.inner._client)  # the DynamoDB table under the held reads
        calls = recorder.record(lambda: None if _lock(other.http, ws_id) else None)
    finally:
        api.unlock(ws_id)
        api.close()
        other.close()
    return [name for name, _ in calls]


def run(size: Size = Size.FULL) -> Outcome:
    outcome = Outcome("lock_contention")
    duration = size.pick(full=30.0, quick=10.0, smoke=0.5)
    levels = size.pick(full=LEVELS, quick=LEVELS, smoke=(1,))
    warmup = size.pick(full=2 * POLL_INTERVAL_S + 1, quick=2 * POLL_INTERVAL_S + 1, smoke=0.0)
    with local_stack(workers=False) as stack:
        calls = refused_lock_calls(stack)
        outcome.details["refused_lock_dynamodb_calls"] = calls
        results = {n: measure(stack, n, duration, warmup) for n in levels}
    base = results[levels[0]]["holder_writes_per_s"]
    for n, found in results.items():
        outcome.row(
            f"holder writes/s, {n} contender{'s' if n > 1 else ''}",
            found["holder_writes_per_s"],
            base,
            unit="/s",
            note=f"pollers: {found['contender_requests_per_s']:.1f} lock requests/s, {found['refused']} refused",
        )
    for n, found in results.items():
        outcome.row(
            f"holder write+unlock p50, {n} contenders",
            found["write_and_unlock_p50_s"],
            results[1]["write_and_unlock_p50_s"],
        )
        outcome.row(f"holder lock acquisition p50, {n} contenders", found["acquire_p50_s"], results[1]["acquire_p50_s"])
        outcome.details[f"{n} contenders"] = found
    reads = sum(1 for c in calls if c in READS)
    writes = len(calls) - reads
    outcome.notes.append(
        f"one refused lock = {len(calls)} DynamoDB calls ({reads} reads, {writes} writes): {', '.join(calls)}"
    )
    return outcome
