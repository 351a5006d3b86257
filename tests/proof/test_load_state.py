"""Load: concurrent state clients across workspaces (reads, writes, lock contention) on a server in its own process.

Full (`make proof`): 200 clients, 50 workspaces, 5 minutes, on the embedded server and on the AWS adapters (moto).
Quick (`make test`): 20 clients, 5 workspaces, 15 seconds, on the embedded server.

Proves: zero lost or reordered versions (every acknowledged write's serial and MD5 in the history, its bytes
intact, the history in serial order), no 5xx or unexpected status, every read's bytes what their writer sent.
Measures: writes/s and p50/p99 latencies, each against direct SQLite and file writes of the same payloads
measured in the same run. The clients share TFC's per-token limit (30/s): each token serves four clients, a 429
is waited out as go-tfe does.
"""

from __future__ import annotations

import asyncio
import random

import pytest
from load_support import FULL, create_workspace, direct_writes, latency, new_tokens, report, served, sized
from state_load import StateClients, new_lineage, verify

pytestmark = [pytest.mark.proof, pytest.mark.long]

CLIENTS = sized(20, 200)
WORKSPACES = sized(5, 50)
DURATION_S = sized(15, 300)
CLIENTS_PER_TOKEN = 4
BACKENDS = ["embedded", "moto"] if FULL else ["embedded"]


@pytest.mark.timeout(DURATION_S * 4 + 300)
@pytest.mark.parametrize("backend", BACKENDS)
def test_concurrent_state_clients_lose_and_reorder_nothing(
    backend: str, proof_rng: random.Random, proof_seed: int
) -> None:
    with served(backend) as server:
        tokens = new_tokens(server, max(1, CLIENTS // CLIENTS_PER_TOKEN))
        with server.client() as http:
            workspaces = {
                create_workspace(http, server.organization, f"load-{n}-{proof_rng.randrange(10**6)}"): new_lineage()
                for n in range(WORKSPACES)
            }
        clients = StateClients(server.url, server.ca_bundle, tokens, workspaces, proof_rng)
        tally = asyncio.run(clients.run(CLIENTS, DURATION_S))
        elapsed = clients.elapsed_s
        problems = asyncio.run(verify(clients, server.token))
        log = server.log_text()

    assert not problems, "\n".join(problems[:30])
    assert tally.acks, "no write was acknowledged"
    assert "Traceback" not in log, log[log.index("Traceback") - 500 :][:4000]
    baseline = direct_writes(tally.payloads)
    served_rate = len(tally.acks) / elapsed
    baseline_rate = len(baseline) / sum(baseline)
    write, direct = latency(tally.write_s), latency(baseline)
    report(
        f"load_state_{backend}",
        {
            "command": f"TERRACE_PROOF={'full' if FULL else 'quick'} pytest tests/proof/test_load_state.py",
            "seed": proof_seed,
            "backend": backend,
            "clients": CLIENTS,
            "workspaces": WORKSPACES,
            "duration_s": DURATION_S,
            "acknowledged_writes": len(tally.acks),
            "reads_checked": tally.reads_checked,
            "refused_locks": tally.refused_locks,
            "rate_limited": tally.rate_limit.limited,
            "rate_limit_wait_s": round(tally.rate_limit.waited_s, 1),
            "writes_per_s": served_rate,
            "baseline_writes_per_s": baseline_rate,
            "writes_per_s_ratio": served_rate / baseline_rate,
            "write_p50_s": write["p50_s"],
            "write_p99_s": write["p99_s"],
            "baseline_p50_s": direct["p50_s"],
            "baseline_p99_s": direct["p99_s"],
            "write_p50_ratio": write["p50_s"] / direct["p50_s"],
            "write_p99_ratio": write["p99_s"] / direct["p99_s"],
            "cycle": latency(tally.cycle_s),
            "read": latency(tally.read_s),
        },
    )
