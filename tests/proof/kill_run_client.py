"""Remote runs for the kill proof: workspaces, configurations uploaded through the API, runs, and the apply
counter.

Each run's configuration holds a `null_resource` (replaced at every apply) whose `local-exec` provisioner appends
`start <marker>` then, a moment later, `done <marker>` to a file outside the job's sandbox: a world-writable
folder below a folder the test made (not world-writable, so the runner's sweep of shared temporary folders never
enters it). The marker is unique per run, so the file counts each run's apply executions.
"""

from __future__ import annotations

import io
import tarfile
import tempfile
import time
import uuid
from datetime import datetime
from pathlib import Path
from typing import Any

from job_uids import traversable
from kill_server import Client, wait_for

FINAL = {"applied", "planned_and_finished", "discarded", "errored", "canceled", "force_canceled"}
# the closing note of an apply lost after terraform started applying (`JobRetries._interrupted`): the one way a
# kill may end a run `errored`
INTERRUPTED = "after terraform had started applying"


class ApplyCounter:
    def __init__(self) -> None:
        self.root = traversable(Path(tempfile.mkdtemp(prefix="terrace-proof-apply-")))
        (self.root / "w").mkdir()
        (self.root / "w").chmod(0o1777)
        self.file = self.root / "w" / "executions.log"
        # made here, writable by all: each job runs as a uid of its own with umask 077, so a file the first
        # apply created would refuse the next job uid's append (its provisioner fails, the run errors by itself)
        self.file.touch()
        self.file.chmod(0o666)

    def lines(self) -> list[str]:
        return self.file.read_text().split("\n") if self.file.exists() else []

    def starts(self, marker: str) -> int:
        return self.lines().count(f"start {marker}")

    def done(self, marker: str) -> int:
        return self.lines().count(f"done {marker}")

    def configuration(self, marker: str, sleep_s: float) -> str:
        command = f"echo start {marker} >> {self.file}; sleep {sleep_s}; echo done {marker} >> {self.file}"
        return (
            'resource "null_resource" "counted" {\n'
            '  triggers = {\n    marker = "' + marker + '"\n  }\n'
            '  provisioner "local-exec" {\n    command = "' + command + '"\n  }\n}\n'
        )


def remote_workspace(client: Client, name: str) -> str:
    attributes = {"name": name, "execution-mode": "remote", "terraform-version": "1.0.3", "auto-apply": True}
    body = {"data": {"type": "workspaces", "attributes": attributes}}
    org = client.info.organization
    return str(client.request("POST", f"/api/v2/organizations/{org}/workspaces", body, expect=201).json()["data"]["id"])


def upload(client: Client, workspace_id: str, main_tf: str) -> str:
    body = {"data": {"type": "configuration-versions", "attributes": {"auto-queue-runs": False}}}
    cv = client.request("POST", f"/api/v2/workspaces/{workspace_id}/configuration-versions", body, expect=201).json()
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        info = tarfile.TarInfo("main.tf")
        info.size = len(main_tf.encode())
        tar.addfile(info, io.BytesIO(main_tf.encode()))
    put = client.blobs.put(cv["data"]["attributes"]["upload-url"], content=buffer.getvalue())
    assert put.status_code in (200, 201, 204), put.text
    cv_id = str(cv["data"]["id"])
    wait_for(
        lambda: (
            client.request("GET", f"/api/v2/configuration-versions/{cv_id}").json()["data"]["attributes"]["status"]
            == "uploaded"
        ),
        60,
        f"{cv_id} to be uploaded",
    )
    return cv_id


def start_run(client: Client, workspace_id: str, main_tf: str) -> str:
    cv_id = upload(client, workspace_id, main_tf)
    body = {"data": {"type": "runs", "attributes": {"message": "kill proof", "auto-apply": True}, "relationships": {
        "workspace": {"data": {"type": "workspaces", "id": workspace_id}},
        "configuration-version": {"data": {"type": "configuration-versions", "id": cv_id}}}}}  # fmt: skip
    return str(client.request("POST", "/api/v2/runs", body, expect=201).json()["data"]["id"])


def run(client: Client, run_id: str) -> dict[str, Any]:
    data: dict[str, Any] = client.request("GET", f"/api/v2/runs/{run_id}").json()["data"]
    return data


def status(client: Client, run_id: str) -> str:
    return str(run(client, run_id)["attributes"]["status"])


def wait_final(client: Client, run_id: str, timeout: float) -> str:
    found: str = wait_for(lambda: (s := status(client, run_id)) in FINAL and s, timeout, f"{run_id} to end", 0.5)
    return found


def log_text(client: Client, run_id: str, phase: str) -> str:
    url = client.request("GET", f"/api/v2/runs/{run_id}/{phase}").json()["data"]["attributes"]["log-read-url"]
    if not url:
        return ""
    response = client.http.get(url)
    return response.text if response.status_code == 200 else ""


def events(client: Client, run_id: str) -> list[str]:
    data = client.request("GET", f"/api/v2/runs/{run_id}/run-events?page[size]=100").json()["data"]
    return [f"{e['attributes']['action']}: {e['attributes']['description']}" for e in data]


def status_at(client: Client, run_id: str, moment: datetime) -> str:
    """The run's status at `moment` (a kill): its last transition recorded at or before it (run events carry the
    server's time, in milliseconds; a transition a kill cut short was never recorded)."""
    data = client.request("GET", f"/api/v2/runs/{run_id}/run-events?page[size]=100").json()["data"]  # oldest first
    before = [e["attributes"]["action"] for e in data if _when(e["attributes"]["created-at"]) <= moment]
    return str(before[-1]) if before else "none"


def _when(iso_time: str) -> datetime:
    return datetime.fromisoformat(iso_time.replace("Z", "+00:00"))


def interrupted(client: Client, run_id: str) -> bool:
    """Whether the run's apply was lost after terraform had started applying (what may end a killed run
    `errored`)."""
    return INTERRUPTED in log_text(client, run_id, "apply")


def marker() -> str:
    return f"m{uuid.uuid4().hex[:12]}"


def settle(seconds: float) -> None:
    time.sleep(seconds)
