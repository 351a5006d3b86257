"""The GitHub App's deliveries (`POST /api/vcs/github-app/webhook`, a public route): one webhook for the whole App,
its secret the deployment's (`TERRACE_GITHUB_APP_WEBHOOK_SECRET`). The HMAC of the body under it
(`X-Hub-Signature-256`) is checked in constant time before anything else is read; a delivery id is accepted once; the
payload's `installation.id` and repository then name the workspaces connected to that repository through that
installation (`VcsStore.app_connections`), and each gets the same `vcs.delivery` work a repository's own webhook
queues (`webhooks.py`, `ingress.py`: nothing the API can confirm is taken from the payload). Without an App, or
without its webhook secret, the route is not found."""

from __future__ import annotations

import hashlib
import hmac
import time
from collections.abc import Callable, Mapping
from typing import Any

from terrace.domain.errors import BadRequest, Conflict, NotFound, Unauthenticated
from terrace.domain.limits import parse_json
from terrace.services.vcs.github_app import PREFIX
from terrace.services.vcs.store import VcsStore
from terrace.services.vcs.webhooks import DELIVERY, DELIVERY_ID_MAX, github_change


class AppWebhookIngress:
    def __init__(
        self,
        store: VcsStore,
        secret: str,
        publish: Callable[[dict[str, Any]], None],
        now_s: Callable[[], float] = time.time,
    ) -> None:
        self._store, self._secret, self._publish, self._now_s = store, secret, publish, now_s

    def receive(self, headers: Mapping[str, str], body: bytes) -> str:
        """`queued` (with the number of workspaces), `pong` or `ignored`. `headers` by lower-case name."""
        if not self._secret:
            raise NotFound("no GitHub App webhook is configured")
        given = headers.get("x-hub-signature-256", "").removeprefix("sha256=")
        expected = hmac.new(self._secret.encode(), body, hashlib.sha256).hexdigest()
        if not given or not hmac.compare_digest(given.encode(), expected.encode()):
            raise Unauthenticated("the delivery's signature does not match the GitHub App's webhook secret")
        event, delivery = headers.get("x-github-event", ""), headers.get("x-github-delivery", "")
        if not delivery or len(delivery) > DELIVERY_ID_MAX:
            raise BadRequest("a delivery needs its id (X-GitHub-Delivery)")
        if event == "ping":
            return "pong"
        payload = parse_json(body, "delivery")
        installation = (payload.get("installation") or {}).get("id") if isinstance(payload, dict) else None
        repository = ((payload.get("repository") or {}).get("full_name")) if isinstance(payload, dict) else None
        if not isinstance(installation, int) or isinstance(installation, bool) or not isinstance(repository, str):
            return "ignored"
        work = []
        for connection in self._store.app_connections(f"{PREFIX}{installation}", repository[:300]):
            found = github_change(event, payload, connection.identifier)
            if found is not None:
                work.append({"type": DELIVERY, "workspace_id": connection.workspace_id, "delivery": delivery, **found})
        if not work:
            return "ignored"
        if not self._store.first_delivery(f"github-app#{delivery}", int(self._now_s())):
            raise Conflict(f"delivery {delivery} was received before")
        for event_work in work:
            self._publish(event_work)
        return "queued"
