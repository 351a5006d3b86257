"""Lock contention: one holder cycles lock -> state write -> unlock on a workspace while N contenders poll
its lock (1, 5, 50). Reports the holder's state writes per second and the ratio to the 1-contender figure.

Clients are Terraform 1.0.3's `remote` backend calls over the TFC API: POST .../actions/lock (a contender
that gets the lock releases it at once, as a quick plan would), POST .../state-versions with the state
inline, POST .../actions/unlock. A refused lock should cost the server one read and no write, so pollers
barely slow the holder down.
"""

from __future__ import annotations

import base64
import hashlib
import json
import random
import threading
import time
import uuid
from typing import Any

from bench.api_latency import READS, Recorder
from bench.common import Api, Outcome, local_stack, unique

LEVELS = (1, 5, 50)
POLL_INTERVAL_S = 1.0  # each contender asks once a second (terraform -lock-timeout starts at 1 s, then backs off)
HOLDER_RETRY_S = 0.02  # the holder retries a refused lock quickly


def _lock(api: Api, ws_id: str) -> bool:
    response = api.http.post(
        f"/api/v2/workspaces/{ws_id}/actions/lock",
        json={"data": {"type": "", "attributes": {"reason": "bench"}}},
        headers={"Content-Type": "application/vnd.api+json"},
    )
    if response.status_code not in (200, 409, 423):
        raise RuntimeError(f"lock: {response.status_code} {response.text[:300]}")
    return response.status_code == 200


def _write_state(api: Api, ws_id: str, serial: int, lineage: str) -> None:
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
    api.request(
        "POST",
        f"/api/v2/workspaces/{ws_id}/state-versions",
        {"data": {"type": "state-versions", "attributes": attributes}},
    )


class Level:
    """One holder and `contenders` pollers on a fresh workspace for `duration_s`."""

    def __init__(self, stack: Any, contenders: int, duration_s: float) -> None:
        self.stack, self.contenders, self.duration_s = stack, contenders, duration_s
        self.ws_id = Api(stack).create_workspace(unique("contended"), **{"execution-mode": "local"})["id"]
        self.stop = threading.Event()
        self.writes = 0
        self.refused = self.won = 0
        self.errors: list[BaseException] = []
        self._count = threading.Lock()

    def holder(self) -> None:
        api, lineage, serial = Api(self.stack), str(uuid.uuid4()), 0
        try:
            while not self.stop.is_set():
                while not _lock(api, self.ws_id):
                    if self.stop.is_set():
                        return
                    time.sleep(HOLDER_RETRY_S)
                serial += 1
                _write_state(api, self.ws_id, serial, lineage)
                api.unlock(self.ws_id)
                if not self.stop.is_set():
                    self.writes += 1
        except BaseException as exc:  # noqa: BLE001 - reported by run()
            self.errors.append(exc)
        finally:
            api.close()

    def contender(self) -> None:
        api = Api(self.stack)
        try:
            self.stop.wait(random.uniform(0, POLL_INTERVAL_S))  # pollers spread over the interval, not in bursts
            while not self.stop.wait(POLL_INTERVAL_S):
                if _lock(api, self.ws_id):
                    api.unlock(self.ws_id)
                    with self._count:
                        self.won += 1
                else:
                    with self._count:
                        self.refused += 1
        except BaseException as exc:  # noqa: BLE001
            self.errors.append(exc)
        finally:
            api.close()

    def measure(self) -> dict[str, float]:
        threads = [threading.Thread(target=self.contender) for _ in range(self.contenders)]
        for thread in threads:
            thread.start()
        time.sleep(2 * POLL_INTERVAL_S)  # the pollers are under way before the clock starts
        holder = threading.Thread(target=self.holder)
        start = time.perf_counter()
        holder.start()
        time.sleep(self.duration_s)
        self.stop.set()
        elapsed = time.perf_counter() - start
        for thread in (holder, *threads):
            thread.join(120)
        if self.errors:
            raise RuntimeError(f"{len(self.errors)} clients failed") from self.errors[0]
        return {
            "holder_writes_per_s": self.writes / elapsed,
            "contender_requests_per_s": (self.refused + self.won) / elapsed,
            "refused": self.refused,
            "won": self.won,
            "elapsed_s": elapsed,
        }


def refused_lock_calls(stack: Any) -> list[str]:
    """The DynamoDB calls of one refused lock, recorded on the API's own client."""
    api = Api(stack)
    ws_id = api.create_workspace(unique("refused"), **{"execution-mode": "local"})["id"]
    api.lock(ws_id)
    other = Api(stack)
    try:
        recorder = Recorder(stack.local.container.table._client)
        calls = recorder.record(lambda: _lock(other, ws_id) and None)
    finally:
        api.unlock(ws_id)
        api.close()
        other.close()
    return [name for name, _ in calls]


def run(quick: bool = False) -> Outcome:
    outcome = Outcome("lock_contention")
    duration = 10.0 if quick else 30.0
    with local_stack(workers=False) as stack:
        calls = refused_lock_calls(stack)
        outcome.details["refused_lock_dynamodb_calls"] = calls
        results = {n: Level(stack, n, duration).measure() for n in LEVELS}
    base = results[LEVELS[0]]["holder_writes_per_s"]
    for n, found in results.items():
        outcome.row(
            f"holder writes/s, {n} contender{'s' if n > 1 else ''}",
            found["holder_writes_per_s"],
            base,
            unit="/s",
            note=f"pollers: {found['contender_requests_per_s']:.1f} lock requests/s, {found['refused']} refused",
        )
        outcome.details[f"{n} contenders"] = found
    reads = sum(1 for c in calls if c in READS)
    writes = len(calls) - reads
    outcome.notes.append(
        f"one refused lock = {len(calls)} DynamoDB calls ({reads} reads, {writes} writes): {', '.join(calls)}"
    )
    return outcome
