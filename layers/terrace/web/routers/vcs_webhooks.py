"""The public route of a forge's webhook deliveries (`services/vcs/webhooks.py`): no bearer token, the HMAC of the
body under the workspace's webhook secret is the authentication. Answered at once; the work is a queued event."""

from __future__ import annotations

from fastapi import APIRouter, Request

from terrace.web.deps import ContainerDep
from terrace.web.jsonapi import JSONAPIResponse, RawBody

router = APIRouter(prefix="/api/vcs")


@router.post("/webhooks/{workspace_id}", status_code=202)
def receive_delivery(workspace_id: str, request: Request, body: RawBody, container: ContainerDep) -> JSONAPIResponse:
    headers = {name.lower(): value for name, value in request.headers.items()}
    outcome = container.vcs_webhooks.receive(workspace_id, headers, body)
    return JSONAPIResponse({"meta": {"delivery": outcome}}, status_code=200 if outcome == "pong" else 202)
