"""A user, an organization, a remote-execution workspace, and a scripted runner over /api/runner."""

from __future__ import annotations

import io
import tarfile
from dataclasses import dataclass
from typing import Any

from event_loops import served
from fastapi.testclient import TestClient
from terrace.adapters.forge import Forge
from terrace.adapters.job_queue import QueuedJob
from terrace.adapters.lanes import Lanes
from terrace.adapters.memory_blobs import MemoryBlobs
from terrace.adapters.outbound import Outbound
from terrace.adapters.table_job_queue import TableJobQueue
from terrace.bootstrap import Container, build_memory
from terrace.config import Settings
from terrace.domain.principal import PrincipalKind
from terrace.services import shared_keys
from terrace.services.events import landed_event
from terrace.services.runs.stage_participants import StageParticipant
from terrace.web.app import create_app


def tarball(files: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


@dataclass
class RunEnv:
    container: Container
    client: TestClient
    headers: dict[str, str]
    workspace_id: str
    runner_token: str  # a runner token of `organization`, as the scaler mints them
    organization: str = "acme"

    @property
    def queue(self) -> TableJobQueue:
        assert isinstance(self.container.job_queue, TableJobQueue)
        return self.container.job_queue

    def queued(self) -> list[QueuedJob]:
        return self.queue.queued(self.organization)

    @property
    def blobs(self) -> MemoryBlobs:
        assert isinstance(self.container.blobs, MemoryBlobs)
        return self.container.blobs

    def take_part(self, participant: StageParticipant) -> StageParticipant:
        """Register a stand-in participant, its organization marked as using its kind (as a run task or a policy
        set of its own would: `domain/stage_usage.py`)."""
        self.container.table.put(shared_keys.stage_usage_marker(self.organization, participant.kind))
        self.container.stage_participants.append(participant)
        return participant

    def api(self, method: str, path: str, body: Any = None, **kwargs: Any) -> Any:
        return self.client.request(method, f"/api/v2{path}", json=body, headers=self.headers, **kwargs)

    def upload_config(self, *, speculative: bool = False, workspace_id: str | None = None) -> str:
        ws = workspace_id or self.workspace_id
        body = {
            "data": {
                "type": "configuration-versions",
                "attributes": {"auto-queue-runs": False, "speculative": speculative},
            }
        }
        response = self.api("POST", f"/workspaces/{ws}/configuration-versions", body)
        assert response.status_code == 201, response.text
        cv = response.json()["data"]
        key = cv["attributes"]["upload-url"].split("memory://blobs/")[1].split("?")[0]
        self.land(key, tarball({"main.tf": 'output "x" { value = 1 }'}))
        return str(cv["id"])

    def land(self, key: str, data: bytes) -> None:
        """A client's PUT to an upload URL of the memory blob store, then the `blob.landed` event the events worker
        handles (S3's event notification; the embedded blob server hands it over in the PUT itself)."""
        self.blobs.put(key, data)
        self.container.events.handle(landed_event(key))

    def create_run(self, cv_id: str, workspace_id: str | None = None, **attributes: Any) -> dict[str, Any]:
        body = {
            "data": {
                "type": "runs",
                "attributes": attributes,
                "relationships": {
                    "workspace": {"data": {"type": "workspaces", "id": workspace_id or self.workspace_id}},
                    "configuration-version": {"data": {"type": "configuration-versions", "id": cv_id}},
                },
            }
        }
        response = self.api("POST", "/runs", body)
        assert response.status_code == 201, response.text
        return dict(response.json()["data"])

    def run(self, run_id: str) -> dict[str, Any]:
        response = self.api("GET", f"/runs/{run_id}")
        assert response.status_code == 200, response.text
        return dict(response.json()["data"])

    def runner(self, method: str, path: str, *, token: str | None = None, **kwargs: Any) -> Any:
        headers = {"Authorization": f"Bearer {token or self.runner_token}"}
        return self.client.request(method, f"/api/runner{path}", headers=headers, **kwargs)

    def claim(self, runner_id: str = "r1", token: str | None = None) -> dict[str, Any]:
        """POST /jobs/next as a runner of the organization: the claimed spec of its next job."""
        response = self.runner("POST", "/jobs/next", json={"runner_id": runner_id}, token=token)
        assert response.status_code == 200, f"{response.status_code} {response.text}"
        return dict(response.json())

    def work_next(
        self, *, status: str = "finished", has_changes: bool = True, log: bytes = b"working\n", runner_id: str = "r1"
    ) -> dict[str, Any]:
        """Take the highest-priority job, claim it, log, finish it. Returns the claimed spec."""
        spec = self.claim(runner_id)
        put = self.runner("PUT", f"/jobs/{spec['job_id']}/logs?offset=0", content=log)
        assert put.status_code == 204, put.text
        done = self.runner(
            "POST",
            f"/jobs/{spec['job_id']}/finish",
            json={"runner_id": runner_id, "status": status, "has_changes": has_changes, "resource_additions": 1},
        )
        assert done.status_code == 200, done.text
        return spec


def join(env: RunEnv, token: str, username: str, organization: str = "acme") -> str:
    """`username` (whose token is `token`) joins the organization: an owner invites them, they accept.
    Returns the membership id."""
    invite = {"data": {"type": "organization-memberships", "relationships": {"user": {"data": {"type": "users",
              "id": username}}}}}  # fmt: skip
    response = env.api("POST", f"/organizations/{organization}/organization-memberships", invite)
    assert response.status_code == 202, response.text
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/vnd.api+json"}
    own = env.client.get("/api/v2/organization-memberships", headers=headers).json()["data"]
    [mine] = [m["id"] for m in own if m["relationships"]["organization"]["data"]["id"] == organization]
    accepted = env.client.post(f"/api/v2/organization-memberships/{mine}/actions/accept", headers=headers)
    assert accepted.status_code == 200, accepted.text
    return str(mine)


def make_run_env(
    organization: str = "acme",
    lanes: Lanes | None = None,
    forge: Forge | None = None,
    outbound: Outbound | None = None,
    **settings: Any,
) -> RunEnv:
    """`lanes`: the dispatcher's lanes (default: in memory); `forge`: the forge port (default: in memory);
    `outbound`: the outbound port (default: in memory)."""
    container = build_memory(
        Settings(
            table_name="memory",
            blob_bucket="memory",
            url_signing_secret="sign",
            force_cancel_cooloff_s=0,
            **settings,
        )
    )
    if lanes is not None:
        container.lanes = lanes  # before any service is built
    if forge is not None:
        container.forge = forge
    if outbound is not None:
        container.outbound = outbound
    user = container.accounts.create_user("alice", "alice@example.com")
    token = container.accounts.issue_token(PrincipalKind.USER, user.id).secret
    client = served(TestClient(create_app(container)))
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/vnd.api+json"}
    client.post(
        "/api/v2/organizations",
        headers=headers,
        json={"data": {"type": "organizations", "attributes": {"name": organization, "email": "a@example.com"}}},
    )
    response = client.post(
        f"/api/v2/organizations/{organization}/workspaces",
        headers=headers,
        json={"data": {"type": "workspaces", "attributes": {"name": "app", "execution-mode": "remote"}}},
    )
    assert response.status_code == 201, response.text
    runner_token = container.runner_credentials.runner_token(organization)
    return RunEnv(container, client, headers, response.json()["data"]["id"], runner_token, organization)
