"""Webhook deliveries (`POST /api/vcs/webhooks/:workspace_id`, a public route): the HMAC of the body under the
workspace's own webhook secret is the delivery's authentication (`X-Hub-Signature-256`; Gitea's and Forgejo's
`X-Gitea-Signature`/`X-Forgejo-Signature` carry the same hex digest), checked in constant time before anything else
is read; a delivery id is accepted once (`X-GitHub-Delivery`, remembered a week: a replay is refused); the answer is
given at once and the work queued as a `vcs.delivery` event (`ingress.py`). A GitLab repository's deliveries carry
the secret itself as `X-Gitlab-Token` (compared in constant time) and their id as `X-Gitlab-Event-UUID` (or
`Idempotency-Key`); push, tag push and merge request events become the same work (`domain/gitlab_events.py`); the
connection's kind, not the delivery's headers, decides which check applies. What the forge's API can confirm is not
taken from the payload: the event carries only what names the change (a ref, a SHA, a pull request's number)."""

from __future__ import annotations

import hashlib
import hmac
import time
from collections.abc import Callable, Mapping
from typing import Any

from terrace.domain import gitlab_events, vcs_events
from terrace.domain.errors import BadRequest, Conflict, NotFound, Unauthenticated
from terrace.domain.limits import parse_json
from terrace.services.vcs.connections import RepositoryConnections
from terrace.services.vcs.store import Connection, VcsStore

DELIVERY = "vcs.delivery"
SIGNATURES = ("x-hub-signature-256", "x-gitea-signature", "x-forgejo-signature")
EVENTS = ("x-github-event", "x-gitea-event", "x-forgejo-event")
DELIVERIES = ("x-github-delivery", "x-gitea-delivery", "x-forgejo-delivery")
GITLAB_DELIVERIES = ("x-gitlab-event-uuid", "idempotency-key")
DELIVERY_ID_MAX = 128
PR_ACTIONS = ("opened", "synchronize", "reopened")


def _header(headers: Mapping[str, str], names: tuple[str, ...]) -> str:
    return next((headers[n] for n in names if headers.get(n)), "")


class WebhookIngress:
    def __init__(
        self,
        store: VcsStore,
        connections: RepositoryConnections,
        publish: Callable[[dict[str, Any]], None],
        now_s: Callable[[], float] = time.time,
    ) -> None:
        self._store, self._connections, self._publish, self._now_s = store, connections, publish, now_s

    def receive(self, workspace_id: str, headers: Mapping[str, str], body: bytes) -> str:
        """`queued`, `pong` or `ignored`; Unauthenticated for a missing or wrong signature, Conflict for a delivery
        seen before. `headers` by lower-case name."""
        connection = self._connections.connection(workspace_id)
        if connection is None or not connection.secret:  # through the GitHub App: its own webhook delivers
            raise NotFound(f"no repository webhook of workspace {workspace_id}")
        self._verify(connection, headers, body)
        gitlab = connection.kind == "gitlab"
        event = headers.get("x-gitlab-event", "") if gitlab else _header(headers, EVENTS)
        delivery = _header(headers, GITLAB_DELIVERIES if gitlab else DELIVERIES)
        if not delivery or len(delivery) > DELIVERY_ID_MAX:
            raise BadRequest(f"a delivery needs its id ({'X-Gitlab-Event-UUID' if gitlab else 'X-GitHub-Delivery'})")
        if event == "ping":
            return "pong"
        payload = parse_json(body, "delivery")
        found = (_gitlab_event if gitlab else _event)(event, payload, connection.identifier)
        if found is None:
            return "ignored"
        if not self._store.first_delivery(f"{workspace_id}#{delivery}", int(self._now_s())):
            raise Conflict(f"delivery {delivery} was received before")
        self._publish({"type": DELIVERY, "workspace_id": workspace_id, "delivery": delivery, **found})
        return "queued"

    def _verify(self, connection: Connection, headers: Mapping[str, str], body: bytes) -> None:
        secret = self._connections.secret(connection)
        if connection.kind == "gitlab":
            given, expected = headers.get("x-gitlab-token", ""), secret
        else:
            given = _header(headers, SIGNATURES).removeprefix("sha256=")
            expected = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
        if not given or not hmac.compare_digest(given.encode(), expected.encode()):
            raise Unauthenticated("the delivery's signature does not match the workspace's webhook secret")


def github_change(event: str, payload: Any, identifier: str) -> dict[str, Any] | None:
    """What a GitHub-shaped delivery names for a repository `identifier` (the App's deliveries too)."""
    return _event(event, payload, identifier)


def _event(event: str, payload: Any, identifier: str) -> dict[str, Any] | None:
    """What names the change, for the event; None when it starts nothing (another repository, another event)."""
    if event == "push":
        return _push(vcs_events.read_push(payload), identifier)
    if event == "pull_request":
        return _pull_request(vcs_events.read_pull_request(payload), identifier)
    return None


def _gitlab_event(event: str, payload: Any, identifier: str) -> dict[str, Any] | None:
    kind = gitlab_events.EVENTS.get(event)
    if kind in ("push", "tag_push"):
        return _push(gitlab_events.read_push(payload), identifier)
    if kind == "merge_request":
        return _pull_request(gitlab_events.read_merge_request(payload), identifier)
    return None


def _push(push: vcs_events.Push | None, identifier: str) -> dict[str, Any] | None:
    if push is None or push.repository.lower() != identifier.lower():
        return None
    return {"event": "push", "ref": push.ref, "before": push.before, "after": push.after, "sender": push.sender,
            "compare_url": push.compare_url}  # fmt: skip


def _pull_request(pr: vcs_events.PullRequest | None, identifier: str) -> dict[str, Any] | None:
    if pr is None or pr.repository.lower() != identifier.lower() or pr.action not in PR_ACTIONS:
        return None
    return {"event": "pull_request", "number": pr.number, "head_sha": pr.head_sha, "head_ref": pr.head_ref,
            "base_ref": pr.base_ref, "fork": pr.from_fork, "url": pr.url, "title": pr.title,
            "sender": pr.sender}  # fmt: skip
