"""The embedded server (SQLite + files, `terrace serve`) against moto (the AWS adapters), in the same run:

- API latency of workspace read, lock+unlock and current-state-version, p50/p99 at 1 and 20 clients;
- RSS growth of the server process over state writes (10 KB inline states; target: flat within 50 MB);
- stop time with a run in flight (a remote apply whose provisioner never ends; target: under 5 s);
- state round trip (two-step upload, finalize, download) of 1/10/100 MB against a direct copy of the same
  bytes: for embedded a file written (fsynced) and read back, and the same bytes through a raw HTTPS file server
  with the same client (`bench/embedded_roundtrip.py`); for moto an S3 put+get.

Both servers run in this process (moto too), so RSS is the whole server's.
"""

from __future__ import annotations

import base64
import gc
import hashlib
import json
import signal
import subprocess
import time
import uuid
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from bench import embedded_roundtrip
from bench.api_latency import OPERATIONS, concurrently, latency_levels, operation, prepare_workspace
from bench.common import MB, TERRAFORM, Api, Outcome, Size, Stack, local_stack, median, percentile, rss_bytes, unique
from bench.run_overhead import remote_backend, terraform_env
from bench.state_roundtrip import RoundTrip

BACKENDS = ("embedded", "moto")
RSS_TARGET_MB = 50
STOP_TARGET_S = 5.0
UNLIMITED = 0  # api_rate_limit_per_s: the benchmark measures the server, not TFC's per-token limit (30/s)


def _server(backend: str, shared: Stack | None) -> AbstractContextManager[Stack]:
    """A stack of its own for a measurement (full and quick sizes), or the one the smoke size shares between them."""
    if shared is not None:
        return nullcontext(shared)
    return local_stack(workers=False, backend=backend, api_rate_limit_per_s=UNLIMITED)


def latency(backend: str, size: Size, shared: Stack | None = None) -> dict[str, list[float]]:
    levels = latency_levels(size)
    found: dict[str, list[float]] = {}
    with _server(backend, shared) as stack:
        setup = Api(stack)
        workspaces = [prepare_workspace(setup) for _ in range(max(levels))]
        apis = [Api(stack) for _ in range(max(levels))]
        try:
            for name in OPERATIONS:
                for clients, per_client in levels.items():
                    found[f"{name} x{clients}"] = concurrently(
                        clients, per_client, lambda i, n=name: operation(apis[i], n, workspaces[i])
                    )
        finally:
            for api in (*apis, setup):
                api.close()
    return found


def _state(serial: int, lineage: str, size: int = 10 * 1024) -> bytes:
    doc = {"version": 4, "terraform_version": "1.0.3", "serial": serial, "lineage": lineage, "outputs": {}}
    doc["resources"] = [
        {
            "mode": "managed",
            "type": "null_resource",
            "name": "r",
            "provider": 'provider["registry.terraform.io/hashicorp/null"]',
            "instances": [{"schema_version": 0, "attributes": {"id": "1", "triggers": {"pad": "x" * size}}}],
        }
    ]
    return json.dumps(doc).encode()


def rss_over_writes(backend: str, writes: int, warmup: int = 50, shared: Stack | None = None) -> dict[str, Any]:
    """RSS (MB) after `warmup` state writes and every 100 after, to `writes` (more than `warmup`)."""
    samples: dict[int, float] = {}
    with _server(backend, shared) as stack:
        api = Api(stack)
        try:
            ws_id = api.create_workspace(unique("rss"), **{"execution-mode": "local"})["id"]
            api.lock(ws_id)
            lineage = str(uuid.uuid4())
            started = time.perf_counter()
            for serial in range(1, writes + 1):
                raw = _state(serial, lineage)
                attributes = {
                    "serial": serial,
                    "lineage": lineage,
                    "md5": hashlib.md5(raw).hexdigest(),  # noqa: S324 - the protocol's checksum
                    "state": base64.b64encode(raw).decode(),
                }
                body = {"data": {"type": "state-versions", "attributes": attributes}}
                api.request("POST", f"/api/v2/workspaces/{ws_id}/state-versions", body)
                if serial == warmup or serial % 100 == 0 or serial == writes:
                    gc.collect()
                    samples[serial] = rss_bytes() / MB
            elapsed = time.perf_counter() - started
        finally:
            api.close()
    return {
        "writes": writes,
        "rss_mb": samples,
        "growth_mb": samples[writes] - samples[warmup],
        "per_write_ms": elapsed / writes * 1000,
    }


TICKING = """
resource "null_resource" "slow" {
  provisioner "local-exec" {
    command = "while true; do sleep 0.2; done"
  }
}
"""


def stop_with_a_run_in_flight(backend: str, settle_s: float = 2.0) -> dict[str, Any]:
    """Seconds the stack takes to stop once a remote apply's provisioner has run for `settle_s`."""
    with local_stack(workers=True, backend=backend, execution_mode="remote", api_rate_limit_per_s=UNLIMITED) as stack:
        api = Api(stack)
        name = unique("stop")
        ws_id = api.create_workspace(name)["id"]
        work = stack.state_dir / "stop-work"
        work.mkdir()
        (work / "main.tf").write_text(remote_backend(stack, name) + TICKING)
        env = terraform_env(stack)
        subprocess.run(
            [str(TERRAFORM), "init", "-input=false", "-no-color"],
            cwd=work,
            env=env,
            check=True,
            capture_output=True,
            timeout=300,
        )
        apply = subprocess.Popen(
            [str(TERRAFORM), "apply", "-auto-approve", "-input=false", "-no-color"],
            cwd=work,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            deadline = time.monotonic() + 300
            status = ""
            while status != "applying":
                if time.monotonic() > deadline or apply.poll() is not None:
                    raise RuntimeError(f"the run did not reach applying (last status {status!r})")
                time.sleep(0.5)
                listed = api.request("GET", f"/api/v2/workspaces/{ws_id}/runs").json()["data"]
                status = listed[0]["attributes"]["status"] if listed else ""
            time.sleep(settle_s)  # the provisioner is running
            api.close()
            started = time.perf_counter()
            stack.stop()
            stop_s = time.perf_counter() - started
        finally:
            apply.send_signal(signal.SIGKILL)
            apply.wait()
    return {"stop_s": stop_s}


def round_trips(backend: str, size: Size, shared: Stack | None = None) -> dict[str, Any]:
    plan = size.pick(full=[(1, 5), (10, 3), (100, 2)], quick=[(1, 2), (10, 1), (100, 1)], smoke=[(1, 1)])
    found: dict[str, Any] = {}
    with _server(backend, shared) as stack:
        trip = RoundTrip(stack)
        try:
            trip.terrace(trip.next_state(64 * 1024))
            trip.baseline(b"x" * 1024)
            for size_mb, repeats in plan:
                runs, bases = [], []
                for _ in range(repeats):
                    raw = trip.next_state(size_mb * MB)
                    gc.collect()
                    bases.append(trip.baseline(raw))
                    gc.collect()
                    runs.append(trip.terrace(raw))
                found[f"{size_mb}"] = {
                    "terrace_s": median([r["total"] for r in runs]),
                    "baseline_s": median(bases),
                    "steps": {k: median([r[k] for r in runs]) for k in runs[0]},
                }
        finally:
            trip.close()
    return found


def run(size: Size = Size.FULL) -> Outcome:
    outcome = Outcome("embedded_vs_moto")
    results: dict[str, dict[str, Any]] = {b: {} for b in BACKENDS}
    writes = size.pick(
        full={"embedded": 1000, "moto": 300}, quick={"embedded": 300, "moto": 100}, smoke={"embedded": 3, "moto": 3}
    )
    warmup = size.pick(full=50, quick=50, smoke=2)  # writes before the first sample
    for backend in BACKENDS:
        # the smoke size (make test: does the benchmark still run?) measures on one server per backend; the others
        # give each measurement a fresh server, so that one's RSS or warm caches never reach the next
        with _server(backend, None) if size is Size.SMOKE else nullcontext(None) as shared:
            results[backend]["latency"] = latency(backend, size, shared)
            results[backend]["rss"] = rss_over_writes(backend, writes[backend], warmup, shared)
            if backend == "moto":
                results[backend]["round_trip"] = round_trips(backend, size, shared)
            else:
                results[backend]["round_trip"] = embedded_roundtrip.measure(size)
        results[backend]["stop"] = stop_with_a_run_in_flight(backend, size.pick(full=2.0, quick=2.0, smoke=0.2))
    emb, moto = results["embedded"], results["moto"]
    for label in emb["latency"]:
        for p in (50, 99):
            outcome.row(
                f"{label} p{p}",
                percentile(emb["latency"][label], p),
                percentile(moto["latency"][label], p),
                note="terrace = embedded, baseline = moto",
            )
    outcome.row(
        f"RSS growth over {writes['embedded']} (embedded) / {writes['moto']} (moto) state writes",
        emb["rss"]["growth_mb"],
        moto["rss"]["growth_mb"],
        unit="MB",
        target=f"embedded <= {RSS_TARGET_MB} MB",
    )
    outcome.row(
        "state write (POST inline 10 KB)", emb["rss"]["per_write_ms"] / 1000, moto["rss"]["per_write_ms"] / 1000
    )
    outcome.row(
        "stop with a run in flight", emb["stop"]["stop_s"], moto["stop"]["stop_s"], target=f"< {STOP_TARGET_S} s"
    )
    embedded_roundtrip.rows(emb["round_trip"], outcome)
    for size, trip in moto["round_trip"].items():
        outcome.row(f"{size} MB round trip, moto vs S3 put+get", trip["terrace_s"], trip["baseline_s"])
    outcome.details = results
    outcome.notes.append(
        "RSS (MB) by state writes: " + "; ".join(f"{b}: {results[b]['rss']['rss_mb']}" for b in BACKENDS)
    )
    for size, trip in moto["round_trip"].items():
        steps = ", ".join(f"{k}={v:.3f}" for k, v in trip["steps"].items())
        outcome.notes.append(f"moto {size} MB steps (median s): {steps}")
    return outcome
