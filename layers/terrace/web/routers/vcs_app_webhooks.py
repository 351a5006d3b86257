"""The public route of the GitHub App's webhook deliveries (`services/vcs/app_webhooks.py`): no bearer token, the
HMAC of the body under the App's webhook secret is the authentication. Answered at once; the work is queued."""

from __future__ import annotations

from fastapi import APIRouter, Request

from terrace.web.deps import ContainerDep
from terrace.web.jsonapi import JSONAPIResponse, RawBody

router = APIRouter(prefix="/api/vcs")


@router.post("/github-app/webhook", status_code=202)
def receive_app_delivery(request: Request, body: RawBody, container: ContainerDep) -> JSONAPIResponse:
    headers = {name.lower(): value for name, value in request.headers.items()}
    outcome = container.vcs_app_webhooks.receive(headers, body)
    return JSONAPIResponse({"meta": {"delivery": outcome}}, status_code=200 if outcome == "pong" else 202)
