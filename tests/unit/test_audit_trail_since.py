"""The audit trail's `since`, in process: "created after this date" as HCP's API reads it, at the precision sent.
go-tfe sends whole seconds (TestAuditTrailsList's `using since query param` reads its clock, then sends that second),
so an event recorded earlier in the same second is not after it; a time with a fraction names its millisecond. And
the audit middleware writes an event before the last part of its answer, so a client that reads next finds it."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from types import SimpleNamespace

from run_helpers import RunEnv, make_run_env
from terrace.domain.audit import RecordedRequest
from terrace.web.audit_trail import AuditRequests
from terrace.web.middleware import Message, Receive, Scope, Send


def _actions(env: RunEnv, since: str) -> list[str]:
    response = env.client.get("/api/v2/organizations/acme/audit-trail", headers=env.headers, params={"since": since})
    assert response.status_code == 200, response.text
    return [event["resource"]["action"] for event in response.json()["data"]]


def test_since_is_exclusive_at_the_precision_sent() -> None:
    env = make_run_env()
    assert env.api("POST", f"/workspaces/{env.workspace_id}/actions/lock", {"reason": "x"}).status_code == 200
    events = env.client.get("/api/v2/organizations/acme/audit-trail", headers=env.headers).json()["data"]
    [lock] = [event for event in events if event["resource"]["action"] == "workspace.lock"]
    at = datetime.fromisoformat(lock["timestamp"].replace("Z", "+00:00"))
    whole_second = at.replace(microsecond=0)
    millisecond = at.replace(microsecond=at.microsecond // 1000 * 1000)

    assert "workspace.lock" not in _actions(env, whole_second.strftime("%Y-%m-%dT%H:%M:%SZ"))
    assert "workspace.lock" in _actions(env, (whole_second - timedelta(seconds=1)).strftime("%Y-%m-%dT%H:%M:%SZ"))
    assert "workspace.lock" not in _actions(env, millisecond.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z")
    earlier = millisecond - timedelta(milliseconds=1)
    assert "workspace.lock" in _actions(env, earlier.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z")
    assert "workspace.lock" in _actions(env, at.strftime("%Y-%m-%d"))  # a date: from its start


class _Recorder:
    def __init__(self, log: list[str]) -> None:
        self.log = log

    def record_request(self, request: RecordedRequest) -> None:
        self.log.append(f"recorded {request.method} {request.template} {request.status}")


def test_an_event_is_recorded_before_its_answer_ends() -> None:
    """A client that reads the trail as soon as its action is answered finds the event (go-tfe's
    TestAuditTrailsList creates a workspace and at once lists what happened since)."""
    log: list[str] = []

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        scope["route"] = SimpleNamespace(path="/api/v2/organizations/{organization}/workspaces")
        await send({"type": "http.response.start", "status": 201, "headers": []})
        await send({"type": "http.response.body", "body": b'{"data": {"id": "ws-1"', "more_body": True})
        await send({"type": "http.response.body", "body": b"}}", "more_body": False})

    async def send(message: Message) -> None:
        log.append(f"sent {message['type']}{' (last)' if message.get('more_body') is False else ''}")

    async def receive() -> Message:
        return {"type": "http.request", "body": b"", "more_body": False}

    middleware = AuditRequests(app, lambda: _Recorder(log))  # type: ignore[arg-type,return-value]
    scope = {"type": "http", "method": "POST", "headers": [], "path": "/api/v2/organizations/acme/workspaces"}
    asyncio.run(middleware(scope, receive, send))
    assert log == [
        "sent http.response.start",
        "sent http.response.body",
        "recorded POST /api/v2/organizations/{organization}/workspaces 201",
        "sent http.response.body (last)",
    ]
