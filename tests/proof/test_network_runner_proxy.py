"""Network faults between the runners and the API: the stack's public URL is a TCP proxy the test controls, so the
runner processes reach the API (long-poll, heartbeats, logs, finish) and the blob URLs (configuration download,
plan and state uploads) only through it; while faults are on, it drops connections, delays them and resets them
mid-request.

Proves: the runner retries with back-off and every run reaches a final state within its deadline; an applied run
wrote exactly one state version (its apply ran once: a retried phase never applies twice); a run the faults made
fail ended `errored` with no state version of its own, never stuck.
"""

from __future__ import annotations

import io
import random
import shutil
import ssl
import tarfile
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import sized
from job_uids import traversable
from proof_stack import Client
from tcp_fault_proxy import FaultProxy
from terrace.local.stack import LocalStack

pytestmark = [pytest.mark.proof, pytest.mark.timeout(sized(300, 1800))]
FINAL = {"applied", "planned_and_finished", "discarded", "errored", "canceled", "force_canceled"}
RUN_DEADLINE_S = 300
RUN_SETTINGS: dict[str, Any] = {"job_heartbeat_s": 1, "job_heartbeat_timeout_s": 6, "max_runners": 2,
                                "api_rate_limit_per_s": 1000}  # fmt: skip


def _free_port() -> int:
    with socket_listener() as sock:
        return int(sock.getsockname()[1])


def socket_listener() -> Any:
    import socket

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    return sock


def _configuration(serial_hint: int) -> bytes:
    main_tf = f'output "n" {{\n  value = {serial_hint}\n}}\n'.encode()
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        info = tarfile.TarInfo("main.tf")
        info.size = len(main_tf)
        tar.addfile(info, io.BytesIO(main_tf))
    return buffer.getvalue()


def _queue_run(client: Client, workspace_id: str, n: int, ca: str) -> str:
    body = {"data": {"type": "configuration-versions", "attributes": {"auto-queue-runs": False}}}
    cv = client.api("POST", f"/api/v2/workspaces/{workspace_id}/configuration-versions", body, 201).json()["data"]
    with httpx.Client(verify=ssl.create_default_context(cafile=ca), timeout=30) as blobs:
        put = blobs.put(cv["attributes"]["upload-url"], content=_configuration(n))
        assert put.status_code in (200, 201, 204), put.text
    deadline = time.monotonic() + 60
    while client.api("GET", f"/api/v2/configuration-versions/{cv['id']}").json()["data"]["attributes"]["status"] != (
        "uploaded"
    ):
        assert time.monotonic() < deadline, "the configuration version was never uploaded"
        time.sleep(0.2)
    run = {
        "data": {
            "type": "runs",
            "attributes": {"auto-apply": True, "message": f"proof {n}"},
            "relationships": {
                "workspace": {"data": {"type": "workspaces", "id": workspace_id}},
                "configuration-version": {"data": {"type": "configuration-versions", "id": cv["id"]}},
            },
        }
    }
    return str(client.api("POST", "/api/v2/runs", run, 201).json()["data"]["id"])


def test_runs_complete_through_a_faulty_network(proof_rng: random.Random) -> None:
    state_dir = traversable(Path(tempfile.mkdtemp(prefix="terrace-proof-net-")))  # job uids pass through it
    api_port = _free_port()
    proxy = FaultProxy(random.Random(proof_rng.getrandbits(64)), api_port)
    stack = LocalStack(
        port=api_port,
        organization="net",
        state_dir=state_dir,
        prefix=f"proof-net-{uuid.uuid4().hex[:6]}",
        data_dir=state_dir / "data",
        public_url=f"https://localhost:{proxy.port}",
    )
    stack.settings_overrides = dict(RUN_SETTINGS)
    try:
        stack.start()
        assert stack.info is not None
        direct = f"https://localhost:{api_port}"
        client = Client(stack)
        client.http.base_url = httpx.URL(direct)  # the test's own calls go around the proxy
        name = f"net-{uuid.uuid4().hex[:6]}"
        body = {"data": {"type": "workspaces", "attributes": {"name": name, "execution-mode": "remote",
                "terraform-version": "1.0.3", "auto-apply": True}}}  # fmt: skip
        workspace_id = str(client.api("POST", f"/api/v2/organizations/{client.org}/workspaces", body, 201).json()[
            "data"]["id"])  # fmt: skip
        outcomes: dict[str, str] = {}
        for n in range(1, sized(1, 12) + 1):
            proxy.faulty = False  # the test's upload through the blob URL (the proxy's address) goes clean
            run_id = _queue_run(client, workspace_id, n, stack.info.ca_bundle)
            proxy.drop_rate, proxy.reset_rate = proof_rng.choice([(0.1, 0.1), (0.2, 0.2), (0.3, 0.2)])
            proxy.faulty = True
            deadline = time.monotonic() + RUN_DEADLINE_S
            while True:
                status = client.api("GET", f"/api/v2/runs/{run_id}").json()["data"]["attributes"]["status"]
                if status in FINAL:
                    break
                assert time.monotonic() < deadline, f"{run_id} is still {status} after {RUN_DEADLINE_S}s"
                time.sleep(0.5)
            outcomes[run_id] = status
        proxy.faulty = False
        versions = client.versions(workspace_id)
        by_run: dict[str, int] = {}
        for version in versions:
            run_ref = (version.get("relationships", {}).get("run", {}).get("data") or {}).get("id")
            if run_ref:
                by_run[run_ref] = by_run.get(run_ref, 0) + 1
        for run_id, status in outcomes.items():
            if status == "applied":
                assert by_run.get(run_id) == 1, f"{run_id} applied but wrote {by_run.get(run_id)} state versions"
            else:
                assert status == "errored" and by_run.get(run_id, 0) <= 1, f"{run_id} ended {status}"
        assert len(versions) == sum(by_run.values()) and max(by_run.values(), default=1) == 1
        assert client.statuses[500] == 0, client.bodies_5xx
        print(f"\nnetwork: outcomes={sorted(outcomes.values())} proxy={dict(proxy.seen)} versions={len(versions)}")
        if len(outcomes) >= 6:  # one quick run may fairly error on its faults; of the full run's many, some apply
            assert "applied" in outcomes.values(), "no run completed through the faulty network"
        client.close()
    finally:
        proxy.close()
        stack.stop()
        shutil.rmtree(state_dir, ignore_errors=True)
