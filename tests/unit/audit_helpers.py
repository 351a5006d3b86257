"""A day of actions through the API and the readers of the audit trail's export (tests/unit/test_audit_export.py
and tests/integration/test_audit_export_on_moto.py)."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime
from typing import Any

from event_loops import served
from fastapi.testclient import TestClient
from terrace.bootstrap import Container
from terrace.domain import clock
from terrace.domain.principal import PrincipalKind
from terrace.services.audit.export import day_bounds, object_key
from terrace.web.app import create_app


class Env:
    def __init__(self, container: Container, client: TestClient, headers: dict[str, str]) -> None:
        self.container, self.client, self.headers = container, client, headers

    def api_day(self, path: str, day: date) -> list[dict[str, Any]]:
        """The API's events of `day` (`since` and `until` its first and last microsecond)."""
        since, until = (datetime.fromtimestamp(us / 1_000_000, UTC).isoformat() for us in day_bounds(day))
        params = {"since": since, "until": until, "page[size]": "100"}
        answer = self.client.get(path, headers=self.headers, params=params)
        assert answer.status_code == 200, answer.text
        assert answer.json()["pagination"]["total_pages"] == 1
        return list(answer.json()["data"])

    def exported(self, organization: str, day: date) -> list[dict[str, Any]]:
        raw = self.container.blobs.get(object_key(organization, day))
        return [json.loads(line) for line in raw.decode().splitlines()]


def day_of_actions(container: Container) -> Env:
    """alice creates an organization and a workspace, sets a variable, locks and unlocks, makes a token."""
    user = container.accounts.create_user("alice", "alice@example.com")
    token = container.accounts.issue_token(PrincipalKind.USER, user.id).secret
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/vnd.api+json"}
    client = served(TestClient(create_app(container)))
    org = {"data": {"type": "organizations", "attributes": {"name": "acme", "email": "ops@example.com"}}}
    assert client.post("/api/v2/organizations", headers=headers, json=org).status_code == 201
    ws = {"data": {"type": "workspaces", "attributes": {"name": "prod", "execution-mode": "local"}}}
    ws_id = client.post("/api/v2/organizations/acme/workspaces", headers=headers, json=ws).json()["data"]["id"]
    var = {"data": {"type": "vars", "attributes": {"key": "region", "value": "secret", "category": "terraform"}}}
    assert client.post(f"/api/v2/workspaces/{ws_id}/vars", headers=headers, json=var).status_code == 201
    assert client.post(f"/api/v2/workspaces/{ws_id}/actions/lock", headers=headers, json={}).status_code == 200
    assert client.post(f"/api/v2/workspaces/{ws_id}/actions/unlock", headers=headers).status_code == 200
    return Env(container, client, headers)


def today() -> date:
    return clock.utcnow().date()
