"""The embedded server's state round trip against its two baselines, in one run:

    python -m bench.embedded_roundtrip [--quick | --smoke]

For 1/10/100 MB states, each repeat measures, interleaved on the same machine:
- the Terrace round trip (create the version, PUT the state and its JSON to the upload URLs, finalize, GET the
  API's download URL and follow its redirect to the blob), once per client: httpx in this process and curl in
  its own (`bench/raw_https.py`);
- a direct file copy: the bytes written and fsynced in the data directory, read back (issue 11's baseline);
- the same client PUTting the bytes to a raw HTTPS file server and GETting them back (temporary file, MD5,
  fsync, rename; no framework): what moving these bytes over HTTPS costs here at the least.

`round trip` rows compare the whole round trip; `transfer` rows compare only its two bulk steps (the state's
PUT, the download with its redirect) with the raw server's PUT+GET of the same bytes; `process CPU` rows the CPU
this process spent (with curl as the client: the servers' alone, the API calls' small client part aside), which a
loaded machine disturbs far less than wall time.
"""

from __future__ import annotations

import argparse
import gc
from pathlib import Path
from typing import Any

from bench.common import MB, Outcome, Size, local_stack, median
from bench.raw_https import Client, CurlClient, HttpxClient, RawHttpsServer
from bench.state_roundtrip import TARGET_RATIO, RoundTrip

UNLIMITED = 0  # api_rate_limit_per_s: the benchmark measures the server, not TFC's per-token limit (30/s)


def _clients(ca_bundle: str) -> list[Client]:
    tls_dir = Path(ca_bundle).parent
    found: list[Client] = [HttpxClient(ca_bundle)]
    if CurlClient.available():
        found.append(CurlClient(str(tls_dir / "ca.pem")))
    return found


def measure(size: Size) -> dict[str, Any]:
    """{size_mb: {"file_copy_s": [...], client name: {"terrace": [steps...], "raw": [steps...]}}}"""
    plan = size.pick(full=[(1, 7), (10, 5), (100, 3)], quick=[(1, 3), (10, 2), (100, 1)], smoke=[(1, 1)])
    found: dict[str, Any] = {}
    with local_stack(workers=False, backend="embedded", api_rate_limit_per_s=UNLIMITED) as stack:
        tls_dir = Path(stack.ca_bundle).parent
        raw_root = stack.local.data_dir / "raw-https"
        with RawHttpsServer(raw_root, tls_dir / "localhost.pem", tls_dir / "localhost-key.pem") as raw_url:
            trips = [RoundTrip(stack, client) for client in _clients(stack.ca_bundle)]
            try:
                for trip in trips:  # warm connections and code paths
                    trip.terrace(trip.next_state(64 * 1024))
                    trip.raw_https(b"x" * 1024, raw_url)
                for size_mb, repeats in plan:
                    entry: dict[str, Any] = {"file_copy_s": []}
                    for trip in trips:
                        entry[trip.client.name] = {"terrace": [], "raw": []}
                    for _ in range(repeats):
                        for trip in trips:
                            raw = trip.next_state(size_mb * MB)
                            gc.collect()
                            if trip is trips[0]:
                                entry["file_copy_s"].append(trip.file_copy(raw))
                            entry[trip.client.name]["terrace"].append(trip.terrace(raw))
                            entry[trip.client.name]["raw"].append(trip.raw_https(raw, raw_url))
                            for leftover in raw_root.iterdir():
                                leftover.unlink()
                    found[str(size_mb)] = entry
            finally:
                for trip in trips:
                    trip.close()
    return found


def rows(found: dict[str, Any], outcome: Outcome) -> None:
    for size, entry in found.items():
        copy = median(entry["file_copy_s"])
        for client, runs in entry.items():
            if client == "file_copy_s":
                continue
            terrace = {k: median([r[k] for r in runs["terrace"]]) for k in runs["terrace"][0]}
            raw = {k: median([r[k] for r in runs["raw"]]) for k in runs["raw"][0]}
            transfer = median([r["upload"] + r["download"] for r in runs["terrace"]])
            outcome.row(f"{size} MB round trip, {client}, vs file copy", terrace["total"], copy)
            outcome.row(
                f"{size} MB round trip, {client}, vs raw HTTPS PUT+GET",
                terrace["total"],
                raw["total"],
                target=f"<= {TARGET_RATIO}x at 100 MB",
            )
            outcome.row(f"{size} MB transfer, {client}, vs raw HTTPS PUT+GET", transfer, raw["total"])
            outcome.row(
                f"{size} MB process CPU, {client}, vs raw HTTPS PUT+GET",
                terrace["process cpu"],
                raw["process cpu"],
                note="this process's CPU: the servers, and the client when in-process",
            )
            steps = ", ".join(f"{k}={v * 1000:.0f}" for k, v in terrace.items() if not k.startswith("of which "))
            outcome.notes.append(
                f"{size} MB, {client}: terrace steps (ms) {steps}; raw HTTPS put={raw['upload'] * 1000:.0f} "
                f"get={raw['download'] * 1000:.0f}; file copy {copy * 1000:.0f}"
            )


def run(size: Size = Size.FULL) -> Outcome:
    outcome = Outcome("embedded_roundtrip")
    outcome.details = measure(size)
    rows(outcome.details, outcome)
    return outcome


if __name__ == "__main__":
    from bench.__main__ import print_table

    parser = argparse.ArgumentParser(prog="python -m bench.embedded_roundtrip", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer repeats")
    parser.add_argument("--smoke", action="store_true", help="each step once, 1 MB only (figures meaningless)")
    args = parser.parse_args()
    print_table([run(Size.SMOKE if args.smoke else Size.QUICK if args.quick else Size.FULL)])
