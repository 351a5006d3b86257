"""The audit middleware: the one choke point every recorded action passes through.

Every mutating request (POST, PUT, PATCH, DELETE) of the API, the http backend and the UI, and every state read
(`STATE_READS`) and single sign-on, is handed as it ends to the container's `AuditRecorder`
(`services/audit/recorder.py`): its method and route template (the action), its path parameters (the resource,
the organization), the caller it authenticated as (`note_actor`, called where a request authenticates:
`web/deps.py`, the http backend, the UI's session), its address and its status. Of what a create answers, only the
new object's id and its name or key are kept; no request or response value is. The write runs in a worker
thread before the answer's last part is sent, so a client that reads the trail after an answer finds its event,
and never fails the request (the recorder counts and logs a failure)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import HTTPConnection

from terrace.domain.audit import RecordedRequest
from terrace.domain.principal import Principal
from terrace.services.audit_scope import close_scope, open_scope
from terrace.web.middleware import ASGIApp, Message, Receive, Scope, Send

if TYPE_CHECKING:
    from terrace.services.audit.recorder import AuditRecorder

KEY = "terrace.audit"  # the scope entry the dependencies fill: {"principal": ..., "organization": ...}
MUTATING = frozenset({"POST", "PUT", "PATCH", "DELETE", "LOCK", "UNLOCK"})  # the http backend locks too
# GET routes recorded: what hands out a state's content, and the single sign-on callback (a sign-in)
STATE_READS = frozenset(
    {
        "/api/v2/state-versions/{sv_id}/download",
        "/api/v2/state-versions/{sv_id}/json-download",
        "/state/v1/{org}/{name}",
        "/app/{organization}/workspaces/{name}/states/{sv_id}/download",
        "/app/sign-in/oidc/callback",
        # outputs are state content too (`tfe_outputs`, `terraform output` through the cloud block)
        "/api/v2/workspaces/{workspace_id}/current-state-version-outputs",
        "/api/v2/state-versions/{sv_id}/outputs",
        "/api/v2/state-version-outputs/{wos_id}",
    }
)
# the runner and agent protocols' polls, heartbeats and log chunks: the work of a job, not actions on anything
NOT_RECORDED = frozenset(
    {
        "/api/runner/jobs/next",
        "/api/runner/jobs/{job_id}/heartbeat",
        "/api/runner/jobs/{job_id}/logs",
        "/api/runner/jobs/{job_id}/upload-urls",
        "/api/runner/held-runs",  # which of its held plans a runner may still apply: a question, not an action
        "/scim/v2/.search",  # SCIM's searches are reads sent as POST
        "/scim/v2/Users/.search",
        "/scim/v2/Groups/.search",
    }
)
CREATED_BODY_MAX = 256 * 1024  # a create's answer is read for its id up to this size


def note_actor(connection: HTTPConnection, principal: Principal | None) -> None:
    """Remember who the request authenticated as, for its audit event (a no-op outside the middleware)."""
    holder = connection.scope.get(KEY)
    if holder is None or principal is None:
        return
    holder["principal"] = principal


def note_action(connection: HTTPConnection, verb: str) -> None:
    """Name the verb of the request's action when its form, not its route, says it (the UI's lock button locks,
    unlocks or force-unlocks; a grant's form updates or removes it). A no-op outside the middleware."""
    holder = connection.scope.get(KEY)
    if holder is not None:
        holder["verb"] = verb


def _created(body: bytes) -> dict[str, str]:
    """The id, and the name or key, of the object a JSON:API create answered with (never its values)."""
    try:
        data = json.loads(body).get("data")
    except (ValueError, AttributeError):
        return {}
    if not isinstance(data, dict):
        return {}
    attributes = data.get("attributes")
    if not isinstance(attributes, dict):
        attributes = {}
    found = {"id": str(data.get("id") or "")}
    name = attributes.get("name") or attributes.get("key") or attributes.get("description")
    if isinstance(name, str):
        found["name"] = name[:200]
    return {key: value for key, value in found.items() if value}


def _request_id(scope: Scope) -> str:
    """The client's `X-Request-Id` (at most 100 characters), else a new one: every event names its request."""
    given = dict(scope.get("headers") or []).get(b"x-request-id", b"").decode("latin-1").strip()[:100]
    return given or str(uuid.uuid4())


def _source(scope: Scope) -> str:
    client = scope.get("client")
    return str(client[0]) if client else ""


class AuditRequests:
    def __init__(self, app: ASGIApp, recorder: Callable[[], AuditRecorder]) -> None:
        self.app = app
        self.recorder = recorder  # the container's, read on first use

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        method = str(scope.get("method", ""))
        if scope["type"] != "http" or (method not in MUTATING and method != "GET"):
            await self.app(scope, receive, send)
            return
        holder: dict[str, Any] = {"request_id": _request_id(scope)}
        scope[KEY] = holder
        status = 500
        chunks: list[bytes] = []
        size = 0
        recorded = False

        def body() -> bytes:
            return b"".join(chunks) if size <= CREATED_BODY_MAX else b""

        async def watching_send(message: Message) -> None:
            nonlocal status, size, recorded
            if message["type"] == "http.response.start":
                status = int(message["status"])
                headers = list(message.get("headers") or [])
                if not any(name.lower() == b"x-request-id" for name, _ in headers):  # the id its event carries
                    message = {**message, "headers": [*headers, (b"x-request-id", holder["request_id"].encode())]}
            elif message["type"] == "http.response.body":
                if method == "POST" and size <= CREATED_BODY_MAX:
                    chunk = bytes(message.get("body", b""))
                    size += len(chunk)
                    chunks.append(chunk)
                if not message.get("more_body", False) and not recorded:
                    # written before the answer's end goes out: whoever got the answer finds its event
                    recorded = True
                    await self._record(scope, method, status, holder, body())
            await send(message)

        opened = open_scope(holder)  # the Authorizer notes the organization the request acted in
        try:
            await self.app(scope, receive, watching_send)
        finally:
            close_scope(opened)
            if not recorded:  # no answer was completed (the app raised): the attempt is recorded all the same
                await self._record(scope, method, status, holder, body())

    async def _record(self, scope: Scope, method: str, status: int, holder: dict[str, Any], body: bytes) -> None:
        template = getattr(scope.get("route"), "path", None)
        if not isinstance(template, str) or template in NOT_RECORDED:
            return  # no route answered (nothing was done), or a job's own traffic
        if method == "GET" and template not in STATE_READS:
            return

        request = RecordedRequest(
            method=method,
            template=template,
            params={str(k): str(v) for k, v in (scope.get("path_params") or {}).items()},
            status=status,
            source=_source(scope),
            principal=holder.get("principal"),
            request_id=str(holder["request_id"]),
            created=_created(body) if method == "POST" and status in (200, 201) and body else {},
            verb=str(holder.get("verb") or ""),
            organization=str(holder.get("organization") or ""),
            workspace=str(holder.get("workspace") or ""),
        )
        await run_in_threadpool(self.recorder().record_request, request)
