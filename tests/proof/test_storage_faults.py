"""Storage faults through the ports: the table and the blob store fail or slow down for a window while state
clients (Terraform's http backend protocol and go-tfe's state-version calls over httpx) write state.

Proves: a client meets a clear 503 (JSON:API error, `Retry-After`) or a 4xx, never a 500; nothing is
half-written (every acknowledged write is listed and byte-identical, every listed version's bytes match its md5,
the current version is the last acknowledged write, no lock is left held); the stack recovers when the window
closes. On the embedded server (SQLite, blob folder) and on the AWS adapters over moto.
"""

from __future__ import annotations

import random
import uuid
from pathlib import Path

import pytest
from conftest import sized
from fault_ports import FaultWindow, wrapper
from proof_stack import Client, check_states, running_stack

pytestmark = [pytest.mark.proof, pytest.mark.timeout(sized(300, 1800))]


@pytest.mark.parametrize("backend", ["embedded", "moto"])
def test_state_writes_survive_table_and_blob_faults(backend: str, proof_rng: random.Random, tmp_path: Path) -> None:
    if backend == "moto" and sized(0, 1) == 0:
        pytest.skip(
            "the AWS adapters on moto in make proof only (TERRACE_PROOF=full): make test keeps the embedded case"
        )
    window = FaultWindow(random.Random(proof_rng.getrandbits(64)), backend, error_rate=0.25, delay_rate=0.2)
    with running_stack(backend, tmp_path, wrap_ports=wrapper(window)) as stack:
        client = Client(stack)
        try:
            name = f"faults-{uuid.uuid4().hex[:6]}"
            workspace_id = client.create_workspace(name)
            lineage = str(uuid.uuid4())
            acknowledged: dict[int, bytes] = {}
            refused = 0
            for serial in range(1, sized(8, 60) + 1):
                faulty = proof_rng.random() < 0.7
                window.error_rate = proof_rng.choice([0.05, 0.15, 0.3])
                if faulty:
                    window.start()
                kind = proof_rng.choice(["http", "tfe"])
                try:
                    if kind == "http":
                        state = client.http_write(name, serial, lineage)
                    else:
                        state = client.tfe_write(workspace_id, serial, lineage)
                finally:
                    window.stop()
                if state is not None:
                    acknowledged[serial] = state
                else:
                    refused += 1
                if state is None or client.lock_left:
                    client.force_unlock(workspace_id)  # as a user after a failed run or a lost unlock
            # recovery: with the window closed, a write goes through at once
            final = sized(8, 60) + 1
            state = client.http_write(name, final, lineage)
            assert state is not None, "a write after the fault window failed"
            acknowledged[final] = state
            checked = check_states(client, workspace_id, acknowledged)
            print(
                f"\n{backend}: {checked} refused={refused} faults={dict(window.seen)} statuses={dict(client.statuses)}"
            )
            assert sum(window.seen.values()) > 0, "no fault was injected"
        finally:
            client.close()
