"""Audit events: one record of a security-relevant action, append-only (who, when, from where, on what, how it
ended), and the action a request amounts to, named from its method and route template (`workspace.update`,
`run.apply`, `variable.create`). An event never holds a value a request carried: only names and identifiers."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from terrace.domain.audit_actions import NAMED
from terrace.domain.principal import Principal

SITE = ""  # the organization of an event that belongs to none (a sign-in, a user's own token)
# route segments that name no resource of their own (prefixes of the URL spaces)
_PREFIXES = frozenset({"api", "v2", "app", "state", "v1", "admin"})
_SINGULAR = {
    "vars": "variable",
    "policies": "policy",
    "varsets": "varset",
    "relationships": "relationship",
    "current-state-version": "state-version",
    "authentication-tokens": "authentication-token",
    "session": "session",
    "sign-in": "session",
    "sign-out": "session",
}
_VERBS = {"POST": "create", "PUT": "update", "PATCH": "update", "DELETE": "delete", "GET": "read"}


@dataclass(frozen=True)
class Actor:
    kind: str  # a principal kind (user, team, organization, run, runner, agent, run-task) or "anonymous"
    id: str
    name: str
    token_id: str | None = None


ANONYMOUS = Actor("anonymous", "", "")


@dataclass(frozen=True)
class AuditEvent:
    id: str
    timestamp: str  # ISO 8601, milliseconds
    epoch_us: int  # the order events of one organization are read in
    organization: str  # SITE for an event of no organization
    actor: Actor
    source: str  # the caller's address
    action: str  # `<resource>.<verb>`
    resource_type: str
    resource_id: str
    outcome: int  # the HTTP status the action ended with
    request_id: str = ""
    meta: dict[str, Any] = field(default_factory=dict)  # names, never values

    @property
    def succeeded(self) -> bool:
        return self.outcome < 400


@dataclass(frozen=True)
class RecordedRequest:
    """What the audit middleware saw of one request (names and identifiers only, never a body's values)."""

    method: str
    template: str  # the route's path template, `/api/v2/workspaces/{workspace_id}/vars`
    params: Mapping[str, str]
    status: int
    source: str
    principal: Principal | None = None
    request_id: str = ""
    created: Mapping[str, str] = field(default_factory=dict)  # id and name of what a create answered with
    verb: str = ""  # the verb the route named from its form (`note_action`), else its template's
    organization: str = ""  # the organization the Authorizer decided the request in (`services/audit_scope.py`)
    workspace: str = ""  # and the workspace (a route naming it by name is about this id)


@dataclass(frozen=True)
class Filters:
    since: str = ""
    until: str = ""
    actor: str = ""  # an actor's id or name
    action: str = ""  # an action, or its resource's prefix (`workspace.`)
    resource: str = ""  # a resource's id or type


def singular(segment: str) -> str:
    if segment in _SINGULAR:
        return _SINGULAR[segment]
    if segment.endswith("ies"):
        return segment[:-3] + "y"
    return segment[:-1] if segment.endswith("s") and not segment.endswith("ss") else segment


def action_of(method: str, template: str, params: Mapping[str, str] | None = None) -> tuple[str, str]:
    """(resource type, action) of a request to the route `template`: `POST /api/v2/runs/{run_id}/actions/apply`
    is (`run`, `run.apply`), `PATCH /api/v2/workspaces/{workspace_id}` is (`workspace`, `workspace.update`),
    `POST /api/v2/workspaces/{workspace_id}/vars` is (`variable`, `variable.create`)."""
    listed = NAMED.get((method.upper(), template))
    if listed is not None:
        resource, verb = (_param(part, params or {}) for part in listed)
        resource = singular(resource) if listed[0].startswith("{") else resource
        return resource, f"{resource}.{verb}"
    segments = [s for s in template.strip("/").split("/") if s and s not in _PREFIXES]
    literals = [s for s in segments if not s.startswith("{")]
    verb = _VERBS.get(method.upper(), method.lower())
    if "actions" in segments:
        at = segments.index("actions")
        named = [s for s in segments[:at] if not s.startswith("{")]
        resource = singular(named[-1]) if named else "organization"
        named_action = segments[at + 1] if at + 1 < len(segments) else verb
        if named_action.startswith("{"):
            named_action = str((params or {}).get(named_action.strip("{}"), verb))
        return resource, f"{resource}.{named_action}"
    if not literals:
        return "request", f"request.{verb}"
    resource = singular(literals[-1])
    if method.upper() == "GET" and resource in ("download", "json-download"):
        resource = singular(literals[-2]) if len(literals) > 1 else "state-version"
    return resource, f"{resource}.{verb}"


def _param(part: str, params: Mapping[str, str]) -> str:
    """`part`, or the value of the path parameter it names (`{action}`), cut to a name's length."""
    if not part.startswith("{"):
        return part
    return str(params.get(part.strip("{}"), "") or "unknown")[:64]


_AUTH_TYPES = {"user": "Client", "team": "Client", "organization": "Client", "anonymous": "Anonymous"}


def event_document(event: AuditEvent) -> dict[str, Any]:
    """One event as HCP Terraform's audit trail API answers it (with Terrace's source address and outcome)."""
    return {
        "id": event.id,
        "version": "0",
        "type": "Resource",
        "timestamp": event.timestamp,
        "auth": {
            "accessor_id": event.actor.id,
            "description": event.actor.name,
            "type": _AUTH_TYPES.get(event.actor.kind, "Client"),
            "kind": event.actor.kind,
            "token_id": event.actor.token_id,
            "impersonator_id": None,
            "organization_id": event.organization or None,
        },
        "request": {"id": event.request_id or None, "source": event.source},
        "resource": {
            "id": event.resource_id,
            "type": event.resource_type,
            "action": event.action,
            "outcome": event.outcome,
            "meta": event.meta,
        },
    }
