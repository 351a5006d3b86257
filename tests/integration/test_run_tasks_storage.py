"""Task stages and run tasks on the two real storages: the embedded server's SQLite and DynamoDB/S3 on a moto server.
Through the TFC API: a task and its attachment, a run held in its pre-plan stage with its results (and the post-plan
stage prepared), the request's access token, the callback, the run going on, and the organization's deletion."""

from __future__ import annotations

import io
import json
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from aws import clients, create_table_and_bucket, moto_server
from fastapi.testclient import TestClient
from terrace.adapters.dynamo_table import DynamoTable
from terrace.adapters.memory_outbound import MemoryOutbound
from terrace.adapters.s3_blobs import S3Blobs
from terrace.bootstrap import Container, build_embedded
from terrace.config import Settings
from terrace.domain.principal import PrincipalKind
from terrace.services.events import landed_event
from terrace.web.app import create_app


def _archive() -> bytes:
    buffer, data = io.BytesIO(), b'output "x" { value = 1 }\n'
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        info = tarfile.TarInfo("main.tf")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


@pytest.fixture(params=["sqlite", "moto"])
def container(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Container]:
    if request.param == "sqlite":
        settings = Settings(
            table_name="embedded", blob_bucket="embedded", data_dir=str(tmp_path / "data"), url_signing_secret="s"
        )
        built = build_embedded(settings)
        built.outbound = MemoryOutbound()
        try:
            yield built
        finally:
            built.close()
        return
    with moto_server() as endpoint:
        made = clients(endpoint)
        created = create_table_and_bucket(made)
        settings = Settings(
            table_name=created.table_name, blob_bucket=created.bucket, url_signing_secret="s", aws_endpoint_url=endpoint
        )
        yield Container(
            settings=settings,
            table=DynamoTable(made["dynamodb"], created.table_name),
            blobs=S3Blobs(made["s3"], created.bucket),
        )


def test_a_run_through_its_task_stages(container: Container) -> None:
    user = container.accounts.create_user("alice")
    headers = {
        "Authorization": f"Bearer {container.accounts.issue_token(PrincipalKind.USER, user.id).secret}",
        "Content-Type": "application/vnd.api+json",
    }
    client = TestClient(create_app(container))

    def api(method: str, path: str, body: Any = None, expect: int = 200) -> Any:
        response = client.request(method, f"/api/v2{path}", json=body, headers=headers)
        assert response.status_code == expect, f"{method} {path}: {response.status_code} {response.text}"
        return response.json() if response.content else None

    api("POST", "/organizations", {"data": {"type": "organizations", "attributes": {"name": "acme",
        "email": "a@example.com"}}}, 201)  # fmt: skip
    ws = api("POST", "/organizations/acme/workspaces", {"data": {"type": "workspaces", "attributes": {
        "name": "app", "execution-mode": "remote"}}}, 201)["data"]["id"]  # fmt: skip
    attrs = {"name": "checks", "url": "https://checks.example.com/", "category": "task", "hmac-key": "k"}
    task = api("POST", "/organizations/acme/tasks", {"data": {"type": "tasks", "attributes": attrs}}, 201)
    api("POST", f"/workspaces/{ws}/tasks", {"data": {"type": "workspace-tasks",
        "attributes": {"enforcement-level": "mandatory", "stages": ["pre_plan", "post_plan"]},
        "relationships": {"task": {"data": {"type": "tasks", "id": task["data"]["id"]}}}}}, 201)  # fmt: skip
    cv = api("POST", f"/workspaces/{ws}/configuration-versions", {"data": {"type": "configuration-versions",
        "attributes": {"auto-queue-runs": False}}}, 201)["data"]  # fmt: skip
    key = f"config/{ws}/{cv['id']}.tar.gz"
    container.blobs.put(key, _archive())
    container.events.handle(landed_event(key))
    relationships = {
        "workspace": {"data": {"type": "workspaces", "id": ws}},
        "configuration-version": {"data": {"type": "configuration-versions", "id": cv["id"]}},
    }
    run = api("POST", "/runs", {"data": {"type": "runs", "relationships": relationships}}, 201)["data"]
    assert run["attributes"]["status"] == "pre_plan_running"
    stages = api("GET", f"/runs/{run['id']}/task-stages?include=task_results")
    assert [s["attributes"]["status"] for s in stages["data"]] == ["running", "pending"]
    assert [r["attributes"]["status"] for r in stages["included"]] == ["pending", "pending"]
    [result_id] = [r["id"] for r in stages["data"][0]["relationships"]["task-results"]["data"]]

    container.task_delivery.handle({"type": "run_task.deliver", "result_id": result_id, "attempt": 1})
    assert isinstance(container.outbound, MemoryOutbound)
    payload = json.loads(container.outbound.sent[-1].body)
    callback = client.patch(
        f"/api/v2/task-results/{result_id}/callback",
        json={"data": {"type": "task-results", "attributes": {"status": "passed", "message": "ok"}}},
        headers={"Authorization": f"Bearer {payload['access_token']}"},
    )
    assert callback.status_code == 200, callback.text
    container.stage_progress.advance(stages["data"][0]["id"])
    assert api("GET", f"/runs/{run['id']}")["data"]["attributes"]["status"] == "plan_queued"
    assert api("GET", f"/task-results/{result_id}")["data"]["attributes"]["status"] == "passed"
    assert api("GET", f"/task-stages/{stages['data'][0]['id']}")["data"]["attributes"]["status"] == "passed"

    api("DELETE", "/organizations/acme", expect=204)
    for gone in (
        f"/tasks/{task['data']['id']}",
        f"/task-results/{result_id}",
        f"/task-stages/{stages['data'][0]['id']}",
    ):
        assert client.get(f"/api/v2{gone}", headers=headers).status_code == 404
