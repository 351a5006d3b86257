"""State round trip through the two-step presigned path vs a direct S3 put+get of the same bytes.

Terrace path (the caller holds the workspace lock):
  POST /workspaces/:id/state-versions (serial, md5, lineage; no `state`)
  -> PUT hosted-state-upload-url (raw state) and hosted-json-state-upload-url (a small JSON state)
  -> GET /state-versions/:id (finalizes) -> GET hosted-state-download-url, following the redirect.
Baseline: boto3 put_object + get_object of the same bytes against the same moto server.

The API runs in this process, so the RSS sampled here during the 100 MB round trip includes the API's
memory (and moto's; the baseline's growth shows moto's share).
"""

from __future__ import annotations

import cProfile
import gc
import hashlib
import io
import json
import os
import pstats
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from bench.common import MB, Api, Outcome, RssSampler, Size, Stack, local_stack, median, timed, unique
from bench.raw_https import Client, HttpxClient

INSTANCES = 200  # resource index entries stay few; the size comes from large attributes (like real big states)
TARGET_RATIO = 1.3


def make_state(size: int, serial: int, lineage: str) -> bytes:
    """A valid Terraform 1.0 state of about `size` bytes: INSTANCES null_resource instances with big triggers."""
    pad = max(1, (size - 2048) // INSTANCES - 200)
    instances = [
        {
            "index_key": i,
            "schema_version": 0,
            "sensitive_attributes": [],
            "attributes": {"id": str(1000000 + i), "triggers": {"blob": format(i, "x") * (pad // len(format(i, "x")))}},
        }
        for i in range(INSTANCES)
    ]
    state = {
        "version": 4,
        "terraform_version": "1.0.3",
        "serial": serial,
        "lineage": lineage,
        "outputs": {"count": {"value": INSTANCES, "type": "number"}},
        "resources": [
            {
                "mode": "managed",
                "type": "null_resource",
                "name": "big",
                "provider": 'provider["registry.terraform.io/hashicorp/null"]',
                "instances": instances,
            }
        ],
    }
    return json.dumps(state).encode()


class RoundTrip:
    def __init__(self, stack: Stack, client: Client | None = None) -> None:
        self.stack = stack
        self.api = Api(stack)
        self.embedded = stack.local.data_dir is not None
        # presigned URLs go to the blob store: S3 (moto), or Terrace's own blob URLs (embedded, its CA); the
        # client moves the state's bytes (httpx in this process unless told otherwise)
        self.client = client or HttpxClient(stack.ca_bundle)
        if not self.embedded:
            from terrace.wiring.local_resources import local_clients

            self.s3 = local_clients(stack.local.settings.aws_endpoint_url)["s3"]
            self.bucket = stack.local.settings.blob_bucket
        self.ws_id = self.api.create_workspace(unique("state"), **{"execution-mode": "local"})["id"]
        self.api.lock(self.ws_id)
        self.lineage = str(uuid.uuid4())
        self.serial = 0
        self.index_s = 0.0
        self._time_index()
        self.json_state = json.dumps({"format_version": "0.2", "terraform_version": "1.0.3", "values": {}}).encode()

    def next_state(self, size: int) -> bytes:
        self.serial += 1
        return make_state(size, self.serial, self.lineage)

    def _finalized(self, sv_id: str, deadline_s: float = 60.0) -> dict[str, Any]:
        """The state version once its upload's landing was handled (S3's notification through the events queue on
        moto; the embedded blob server hands it over before its PUT answers), as a client's poll sees it."""
        deadline = time.monotonic() + deadline_s
        while True:
            final = self.api.data("GET", f"/api/v2/state-versions/{sv_id}")
            if final["attributes"]["status"] != "pending" or time.monotonic() > deadline:
                return final
            time.sleep(0.01)

    def terrace(self, raw: bytes, memory: dict[str, float] | None = None) -> dict[str, float]:
        """One round trip; step times in seconds (and, with `memory`, each step's RSS growth in MB)."""
        steps: dict[str, float] = {}
        md5 = hashlib.md5(raw).hexdigest()  # noqa: S324 - the protocol's checksum
        self.client.prepare(raw, self.json_state)
        cpu = time.process_time()  # this process's CPU (all threads): the server's, and an in-process client's
        body = {
            "data": {
                "type": "state-versions",
                "attributes": {"serial": self.serial, "md5": md5, "lineage": self.lineage},
            }
        }
        with self._step("create", steps, memory):
            sv = self.api.data("POST", f"/api/v2/workspaces/{self.ws_id}/state-versions", body)
        attrs = sv["attributes"]
        with self._step("upload", steps, memory):
            self.client.put(attrs["hosted-state-upload-url"], raw)
            self.client.put(attrs["hosted-json-state-upload-url"], self.json_state)
        index_before = self.index_s
        with self._step("finalize", steps, memory):  # the landing event finalizes it (reads never write): poll
            final = self._finalized(sv["id"])
        if final["attributes"]["status"] != "finalized":
            raise RuntimeError(f"state version not finalized: {final['attributes']}")
        # the resource index is built after finalization (`state.uploaded`), off the client's path: waited for here,
        # outside the steps' times, so that it never runs into the download or the next trip (its CPU still counts
        # in `process cpu`, as it did when a read finalized and indexed)
        self._indexed(sv["id"])
        with self._step("download", steps, memory):  # the API's URL, which redirects to the blob's
            downloaded = self.client.get(
                final["attributes"]["hosted-state-download-url"], {"Authorization": f"Bearer {self.stack.token}"}
            )
        if downloaded() != md5:
            raise RuntimeError("downloaded state differs from the uploaded one")
        steps["total"] = sum(v for k, v in steps.items() if not k.startswith("of which"))
        steps["process cpu"] = time.process_time() - cpu
        steps["of which resource index"] = 0.0
        steps["resource index, after the trip"] = self.index_s - index_before
        return steps

    def _indexed(self, sv_id: str, deadline_s: float = 120.0) -> None:
        """Until the indexer is done with the version: indexed, or left unindexed with its reason (`index-error`: a
        state above `max_indexed_state_bytes`, 48 MB, is not parsed)."""
        deadline = time.monotonic() + deadline_s
        while True:
            attributes = self.api.data("GET", f"/api/v2/state-versions/{sv_id}")["attributes"]
            if attributes["resources-processed"] or attributes.get("index-error"):
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"state version {sv_id} was not indexed in {deadline_s} s")
            time.sleep(0.01)

    @contextmanager
    def _step(self, name: str, steps: dict[str, float], memory: dict[str, float] | None) -> Iterator[None]:
        if memory is None:
            with timed(steps, name):
                yield
            return
        with RssSampler() as sampler, timed(steps, name):
            yield
        memory[name] = sampler.growth / MB

    def _time_index(self) -> None:
        """Accumulate the API's time spent replacing the resource index (a bench-only wrapper)."""
        index = self.stack.local.container.state_versions._index
        original = index.replace_resources

        def wrapped(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                self.index_s += time.perf_counter() - start

        index.replace_resources = wrapped

    def baseline(self, raw: bytes) -> float:
        if self.embedded:
            return self.file_copy(raw)
        key = f"bench/{uuid.uuid4().hex}"
        with timed(steps := {}, "total"):
            self.s3.put_object(Bucket=self.bucket, Key=key, Body=raw)
            body = self.s3.get_object(Bucket=self.bucket, Key=key)["Body"].read()
        if len(body) != len(raw):
            raise RuntimeError("baseline download differs")
        self.s3.delete_object(Bucket=self.bucket, Key=key)
        return steps["total"]

    def file_copy(self, raw: bytes) -> float:
        """The embedded baseline: write the bytes to a file in the data directory (fsynced, as a blob is) and
        read them back."""
        path = self.stack.local.data_dir / f"bench-{uuid.uuid4().hex}"
        with timed(steps := {}, "total"):
            with path.open("wb") as out:
                out.write(raw)
                out.flush()
                os.fsync(out.fileno())
            body = path.read_bytes()
        path.unlink()
        if len(body) != len(raw):
            raise RuntimeError("baseline read differs")
        return steps["total"]

    def raw_https(self, raw: bytes, server_url: str) -> dict[str, float]:
        """The same bytes PUT to and read back from a raw HTTPS file server (`bench/raw_https.py`), same client."""
        name = uuid.uuid4().hex
        steps: dict[str, float] = {}
        self.client.prepare(raw)
        cpu = time.process_time()
        with timed(steps, "upload"):
            self.client.put(f"{server_url}/{name}", raw)
        with timed(steps, "download"):
            downloaded = self.client.get(f"{server_url}/{name}")
        if downloaded() != hashlib.md5(raw).hexdigest():  # noqa: S324
            raise RuntimeError("the raw server's copy differs")
        steps["total"] = steps["upload"] + steps["download"]
        steps["process cpu"] = time.process_time() - cpu
        return steps

    def close(self) -> None:
        self.api.close()
        self.client.close()


def profile_finalize(trip: RoundTrip, raw: bytes) -> list[str]:
    """cProfile of the API's finalize (the step that reads the uploaded state: `StateUploads.finalize`, which the
    upload's landing calls) during one round trip."""
    uploads = trip.stack.local.container.state_versions._uploads
    original = uploads.finalize
    profiler = cProfile.Profile()

    def wrapped(sv: Any) -> Any:
        return profiler.runcall(original, sv)

    uploads.finalize = wrapped
    try:
        trip.terrace(raw)
    finally:
        del uploads.finalize
    if not profiler.getstats():
        raise RuntimeError("the round trip never called StateUploads.finalize: what finalizes an upload now?")
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(14)
    return [line for line in out.getvalue().splitlines() if line.strip()][-16:]


def moto_transact_cost(trip: RoundTrip) -> float:
    """Seconds for one 25-put transact_write_items straight to the same moto (what the index replace issues)."""
    from terrace.wiring.local_resources import local_clients

    client = local_clients(trip.stack.local.settings.aws_endpoint_url)["dynamodb"]
    table = trip.stack.local.settings.table_name
    items = [
        {
            "Put": {
                "TableName": table,
                "Item": {"pk": {"S": f"bench#{uuid.uuid4().hex}"}, "sk": {"S": str(i)}, "payload": {"S": "x" * 200}},
            }
        }
        for i in range(25)
    ]
    start = time.perf_counter()
    client.transact_write_items(TransactItems=items)
    return time.perf_counter() - start


def run(size: Size = Size.FULL) -> Outcome:
    outcome = Outcome("state_roundtrip")
    plan = size.pick(full=[(1, 5), (10, 3), (100, 2)], quick=[(1, 2), (10, 1), (100, 1)], smoke=[(1, 1)])
    largest = plan[-1][0]  # its last repetition's memory is sampled
    profiled_mb = size.pick(full=100, quick=0, smoke=1)
    with local_stack(workers=False) as stack:
        trip = RoundTrip(stack)
        try:
            trip.terrace(trip.next_state(64 * 1024))  # warm connections and code paths
            trip.baseline(b"x" * 1024)
            for size_mb, repeats in plan:
                terrace_runs: list[dict[str, float]] = []
                base_runs: list[float] = []
                memory: dict[str, float] = {}
                for n in range(repeats):
                    raw = trip.next_state(size_mb * MB)
                    gc.collect()
                    sample = size_mb == largest and n == repeats - 1
                    with RssSampler() as base_mem:
                        base_runs.append(trip.baseline(raw))
                    gc.collect()
                    terrace_runs.append(trip.terrace(raw, memory if sample else None))
                    if sample:
                        outcome.details["rss_growth_mb"] = {"baseline_put_get": base_mem.growth / MB, **memory}
                steps = {k: median([r[k] for r in terrace_runs]) for k in terrace_runs[0]}
                base = median(base_runs)
                outcome.row(f"{size_mb} MB round trip", steps["total"], base, target=f"<= {TARGET_RATIO}x")
                outcome.row(
                    f"{size_mb} MB excl. resource index",
                    steps["total"] - steps["of which resource index"],
                    base,
                    target=f"<= {TARGET_RATIO}x",
                    note="the index is built after the round trip (state.uploaded), off the client's path",
                )
                outcome.details[f"{size_mb}MB"] = {
                    "size_bytes": len(raw),
                    "baseline_s": base_runs,
                    "terrace_steps_median_s": steps,
                }
                outcome.notes.append(
                    f"{size_mb} MB steps (median s): " + ", ".join(f"{k}={v:.2f}" for k, v in steps.items())
                )
            mem = outcome.details["rss_growth_mb"]
            outcome.row(
                f"{largest} MB: RSS growth in finalize",
                mem["finalize"],
                mem["baseline_put_get"],
                unit="MB",
                note="baseline = direct S3 put+get",
            )
            per_step = ", ".join(f"{k}={v:.0f}" for k, v in mem.items())
            outcome.notes.append(f"{largest} MB RSS growth per step (MB): {per_step}")
            outcome.details["moto_transact_25_puts_s"] = moto_transact_cost(trip)
            outcome.notes.append(
                f"one 25-put transact_write_items straight to this moto: "
                f"{outcome.details['moto_transact_25_puts_s']:.3f} s"
            )
            if profiled_mb:
                profile = profile_finalize(trip, trip.next_state(profiled_mb * MB))
                outcome.details[f"finalize_profile_{profiled_mb}MB"] = profile
        finally:
            trip.close()
    return outcome
