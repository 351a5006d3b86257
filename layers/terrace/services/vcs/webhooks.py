"""Webhook deliveries (`POST /api/vcs/webhooks/:workspace_id`, a public route): the HMAC of the body under the
workspace's own webhook secret is the delivery's authentication (`X-Hub-Signature-256`; Gitea's and Forgejo's
`X-Gitea-Signature`/`X-Forgejo-Signature` carry the same hex digest), checked in constant time before anything else
is read; a delivery id is accepted once (`X-GitHub-Delivery`, remembered a week: a replay is refused); the answer is
given at once and the work queued as a `vcs.delivery` event (`ingress.py`). A GitLab repository's deliveries carry
the secret itself as `X-Gitlab-Token` (compared in constant time) and their id as `X-Gitlab-Event-UUID` (or
`Idempotency-Key`); push, tag push and merge request events become the same work (`domain/gitlab_events.py`); the
connection's kind, not the delivery's headers, decides which check applies. What the forge's API can confirm is not
taken from the payload: the event carries only what names the change (a ref, a SHA, a pull request's number).
Bitbucket Cloud's and Data Center's deliveries are signed as GitHub's with the hook's `secret` (`X-Hub-Signature`
`sha256=`), name their event in `X-Event-Key` and their id in `X-Request-UUID` (Data Center: `X-Request-Id`);
Azure DevOps' service hooks send the secret as the basic authentication's password (`Authorization: Basic`,
compared in constant time) and name the event and its id in the payload (`eventType`, `id`). A push of several
refs (Bitbucket, Azure DevOps) is one event per ref (`<delivery>#<n>` past the first)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import time
from collections.abc import Callable, Mapping
from typing import Any

from terrace.domain import azure_events, bitbucket_events, gitlab_events, vcs_events
from terrace.domain.errors import BadRequest, Conflict, NotFound, Unauthenticated
from terrace.domain.limits import parse_json
from terrace.services.vcs.connections import RepositoryConnections
from terrace.services.vcs.store import Connection, VcsStore

DELIVERY = "vcs.delivery"
SIGNATURES = ("x-hub-signature-256", "x-gitea-signature", "x-forgejo-signature")
EVENTS = ("x-github-event", "x-gitea-event", "x-forgejo-event")
DELIVERIES = ("x-github-delivery", "x-gitea-delivery", "x-forgejo-delivery")
# per kind of forge (`Connection.kind`): the headers naming the event and the delivery's id (None: the payload's)
EVENT_HEADERS: dict[str, tuple[str, ...] | None] = {
    "github": EVENTS, "gitlab": ("x-gitlab-event",), "bitbucket": ("x-event-key",),
    "bitbucket_server": ("x-event-key",), "azure_devops": None,
}  # fmt: skip
DELIVERY_HEADERS: dict[str, tuple[str, ...] | None] = {
    "github": DELIVERIES, "gitlab": ("x-gitlab-event-uuid", "idempotency-key"), "bitbucket": ("x-request-uuid",),
    "bitbucket_server": ("x-request-id",), "azure_devops": None,
}  # fmt: skip
PINGS = frozenset({"ping", "diagnostics:ping"})
BASIC_USER = "terrace"  # Azure DevOps' service hooks: the basic authentication's user name (the secret: its password)
DELIVERY_ID_MAX = 128
PR_ACTIONS = ("opened", "synchronize", "reopened")


def _header(headers: Mapping[str, str], names: tuple[str, ...]) -> str:
    return next((headers[n] for n in names if headers.get(n)), "")


def basic_authorization(secret: str) -> str:
    """The `Authorization` header an Azure DevOps service hook of `secret` sends."""
    return "Basic " + base64.b64encode(f"{BASIC_USER}:{secret}".encode()).decode()


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
        kind = connection.kind if connection.kind in EVENT_HEADERS else "github"
        event_names, delivery_names = EVENT_HEADERS[kind], DELIVERY_HEADERS[kind]
        payload: Any = None
        if event_names is None or delivery_names is None:  # Azure DevOps: named in the payload
            payload = parse_json(body, "delivery")
            event, delivery = vcs_events._text(vcs_events._get(payload, "eventType")), _payload_id(payload)
        else:
            event, delivery = _header(headers, event_names), _header(headers, delivery_names)
        if not delivery or len(delivery) > DELIVERY_ID_MAX:
            named = delivery_names[0].title() if delivery_names else "the payload's id"
            raise BadRequest(f"a delivery needs its id ({named})")
        if event in PINGS:
            return "pong"
        payload = parse_json(body, "delivery") if payload is None else payload
        found = _read(kind, event, payload, connection.identifier)
        if not found:
            return "ignored"
        if not self._store.first_delivery(f"{workspace_id}#{delivery}", int(self._now_s())):
            raise Conflict(f"delivery {delivery} was received before")
        for index, work in enumerate(found):
            named = delivery if index == 0 else f"{delivery}#{index}"
            self._publish({"type": DELIVERY, "workspace_id": workspace_id, "delivery": named, **work})
        return "queued"

    def _verify(self, connection: Connection, headers: Mapping[str, str], body: bytes) -> None:
        secret = self._connections.secret(connection)
        if connection.kind == "gitlab":
            given, expected = headers.get("x-gitlab-token", ""), secret
        elif connection.kind == "azure_devops":
            given, expected = headers.get("authorization", ""), basic_authorization(secret)
        else:
            names = ("x-hub-signature",) if connection.kind.startswith("bitbucket") else SIGNATURES
            given = _header(headers, names)
            given = given.removeprefix("sha256=") if given.startswith("sha256=") or names == SIGNATURES else ""
            expected = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
        if not given or not hmac.compare_digest(given.encode(), expected.encode()):
            raise Unauthenticated("the delivery's signature does not match the workspace's webhook secret")


def _payload_id(payload: Any) -> str:
    value = vcs_events._get(payload, "id")
    return value if isinstance(value, str) else ""


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


def _read(kind: str, event: str, payload: Any, identifier: str) -> list[dict[str, Any]]:
    """What names each change of the event; none when it starts nothing (another repository, another event)."""
    pushes: list[vcs_events.Push | None] = []
    pr: vcs_events.PullRequest | None = None
    if kind == "github":
        pushes = [vcs_events.read_push(payload)] if event == "push" else []
        pr = vcs_events.read_pull_request(payload) if event == "pull_request" else None
    elif kind == "gitlab":
        which = gitlab_events.EVENTS.get(event)
        pushes = [gitlab_events.read_push(payload)] if which in ("push", "tag_push") else []
        pr = gitlab_events.read_merge_request(payload) if which == "merge_request" else None
    elif kind == "bitbucket":
        pushes = list(bitbucket_events.cloud_pushes(payload)) if event == "repo:push" else []
        pr = bitbucket_events.cloud_pull_request(event, payload)
    elif kind == "bitbucket_server":
        pushes = list(bitbucket_events.server_pushes(payload)) if event == "repo:refs_changed" else []
        pr = bitbucket_events.server_pull_request(event, payload)
    elif kind == "azure_devops":
        pushes = list(azure_events.pushes(payload)) if event == "git.push" else []
        pr = azure_events.pull_request(event, payload)
        identifier = identifier.split("/", 1)[1]  # the payload names no organization: the connection's own
    found = [_push(push, identifier) for push in pushes]
    found.append(_pull_request(pr, identifier))
    return [work for work in found if work is not None]


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
