"""Table and blob-store calls per run: what creating a run (`POST /api/v2/runs`) and finishing its plan (the
runner's `POST /api/runner/jobs/:id/finish`) cost in DynamoDB and S3 requests.

The container's table and blob store are wrapped in counters; everything else is the app as it serves requests
(the API token's look-up and the request's grants included). The bench runs it on the AWS adapters over a moto
server; `tests/unit/test_run_call_counts.py` runs the same steps on the memory adapters and pins upper bounds.
A presigned URL is signed locally, not a request: those are counted apart.
"""

from __future__ import annotations

import io
import os
import tarfile
import uuid
from collections import Counter
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from bench.common import Outcome, Size

# measured by this bench before the reads were held (adapters/held_reads.py); the targets are what is reached
# since the stage-usage markers (domain/stage_usage.py), a new run written with its first status change
# (RunScheduler.admit) and the run token revoked in the finishing write (19 and 17 before those); creating reads
# the site admin's cost estimation switch once more in a cold process (cached 2 s: not once per run when warm)
BEFORE = {"create": 32, "finish": 23}
TARGET = {"create": 16, "finish": 11}  # each with its audit event (and a new run's organization)
PRESIGNS = ("presign_put", "presign_get")


class Counting:
    """A table or blob store whose calls are counted in `counts` under `<label>.<method>`."""

    def __init__(self, inner: Any, label: str, counts: Counter[str]) -> None:
        self._inner, self._label, self._counts = inner, label, counts

    def __getattr__(self, name: str) -> Any:
        found = getattr(self._inner, name)
        if name.startswith("_") or not callable(found):
            return found

        def counted(*args: Any, **kwargs: Any) -> Any:
            self._counts[f"{self._label}.{name}"] += 1
            return found(*args, **kwargs)

        return counted


def requests_of(counts: Counter[str]) -> dict[str, int]:
    """Table calls, blob-store requests (presigning apart) and presigned URLs."""
    return {
        "table": sum(n for key, n in counts.items() if key.startswith("table.")),
        "blobs": sum(n for key, n in counts.items() if key.startswith("blobs.") and key[6:] not in PRESIGNS),
        "presigned": sum(n for key, n in counts.items() if key[6:] in PRESIGNS),
        "outbox": sum(n for key, n in counts.items() if key.startswith("outbox.")),
    }


def tarball() -> bytes:
    buffer = io.BytesIO()
    data = b'resource "null_resource" "a" {}\n'
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        info = tarfile.TarInfo("main.tf")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def measure(container: Any, upload: Callable[[str, bytes], None]) -> dict[str, Counter[str]]:
    """Create a run and finish its plan through the app over `container` (whose `table` and `blobs` this wraps);
    `upload(url, data)` PUTs a configuration archive to its upload URL and hands over the landing. Returns the
    calls of each step: create, claim, logs, finish."""
    from fastapi.testclient import TestClient
    from terrace.adapters.held_reads import HeldReadsTable
    from terrace.domain.principal import PrincipalKind
    from terrace.web.app import create_app

    counts: Counter[str] = Counter()
    raw = container.table.inner if isinstance(container.table, HeldReadsTable) else container.table
    # the requests under the held reads (adapters/held_reads.py); no service was built from the table yet
    container.table = HeldReadsTable(Counting(raw, "table", counts))
    # the outbox relay's own read and delete (one batch after each transition's commit) are counted apart
    container.outbox_relay.outbox.table = Counting(raw, "outbox", counts)
    container.blobs = Counting(container.blobs, "blobs", counts)
    user = container.accounts.create_user("counter", "counter@example.com")
    token = container.accounts.issue_token(PrincipalKind.USER, user.id).secret
    client = TestClient(create_app(container))
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/vnd.api+json"}

    def api(method: str, path: str, body: Any = None, *, expect: int = 200, **kwargs: Any) -> Any:
        response = client.request(method, path, json=body, headers=kwargs.pop("headers", headers), **kwargs)
        assert response.status_code == expect, f"{method} {path}: {response.status_code} {response.text}"
        return response.json() if response.content else None

    org = {"data": {"type": "organizations", "attributes": {"name": "counts", "email": "c@example.com"}}}
    api("POST", "/api/v2/organizations", org, expect=201)
    ws = {"data": {"type": "workspaces", "attributes": {"name": "app", "execution-mode": "remote"}}}
    workspace_id = api("POST", "/api/v2/organizations/counts/workspaces", ws, expect=201)["data"]["id"]
    cv = {"data": {"type": "configuration-versions", "attributes": {"auto-queue-runs": False}}}
    created = api("POST", f"/api/v2/workspaces/{workspace_id}/configuration-versions", cv, expect=201)["data"]
    upload(created["attributes"]["upload-url"], tarball())
    runner = {"Authorization": f"Bearer {container.runner_credentials.runner_token('counts')}"}
    api("GET", f"/api/v2/configuration-versions/{created['id']}")  # reads `uploaded` now
    # the tool catalog: seeded once per deployment, then read once per USABLE_TTL_S per process (not per run)
    container.tool_versions.usable_versions(container.settings.default_tool)

    steps: dict[str, Counter[str]] = {}
    counts.clear()
    body = {"data": {"type": "runs", "attributes": {}, "relationships": {
        "workspace": {"data": {"type": "workspaces", "id": workspace_id}},
        "configuration-version": {"data": {"type": "configuration-versions", "id": created["id"]}}}}}  # fmt: skip
    run_id = api("POST", "/api/v2/runs", body, expect=201)["data"]["id"]
    steps["create"] = Counter(counts)
    counts.clear()
    spec = api("POST", "/api/runner/jobs/next", {"runner_id": "r1"}, headers=runner)
    steps["claim"] = Counter(counts)
    counts.clear()
    api("PUT", f"/api/runner/jobs/{spec['job_id']}/logs?offset=0", headers=runner, content=b"planning\n", expect=204)
    steps["logs"] = Counter(counts)
    counts.clear()
    finish = {"runner_id": "r1", "status": "finished", "has_changes": True, "resource_additions": 1}
    api("POST", f"/api/runner/jobs/{spec['job_id']}/finish", finish, headers=runner)
    steps["finish"] = Counter(counts)
    status = api("GET", f"/api/v2/runs/{run_id}")["data"]["attributes"]["status"]
    assert status in ("planned", "cost_estimated"), f"the run is {status}, not planned"
    return steps


def run(size: Size = Size.FULL) -> Outcome:  # noqa: ARG001 (one pass at every size: counts do not vary)
    import httpx
    from terrace.bootstrap import build_aws
    from terrace.config import Settings
    from terrace.local import moto_twin
    from terrace.services.events import landed_event
    from terrace.wiring.local_resources import create_resources

    os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")  # moto takes any credentials
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
    with moto_twin.running() as endpoint:  # the local AWS twin, as every moto the project starts
        resources = create_resources(endpoint, f"counts{uuid.uuid4().hex[:6]}")  # moto's backends outlive a server
        settings = Settings(**resources.settings_fields(), aws_endpoint_url=endpoint, url_signing_secret="bench")
        container = build_aws(settings)

        def upload(url: str, data: bytes) -> None:
            httpx.put(url, content=data).raise_for_status()
            container.events.handle(landed_event(urlsplit(url).path.split("/", 2)[2]))

        steps = measure(container, upload)
    outcome = Outcome("call_counts")
    for step in ("create", "finish"):
        found = requests_of(steps[step])
        total = found["table"] + found["blobs"]
        outcome.row(
            f"{step}: table + S3 calls",
            float(total),
            float(BEFORE[step]),
            unit="calls",
            target=f"<= {TARGET[step]}",
            note=f"table {found['table']}, S3 {found['blobs']}, presigned {found['presigned']}",
        )
        outcome.notes.append(
            f"{step}: {total} calls (table {found['table']}, S3 {found['blobs']}; {found['presigned']} URLs"
            f" presigned; the outbox relay's own {found['outbox']} apart);"
            f" by method: {dict(sorted(steps[step].items()))}"
        )
    for step in ("claim", "logs"):
        found = requests_of(steps[step])
        outcome.notes.append(f"{step}: table {found['table']}, S3 {found['blobs']}, presigned {found['presigned']}")
    outcome.details = {step: dict(counter) for step, counter in steps.items()}
    return outcome
