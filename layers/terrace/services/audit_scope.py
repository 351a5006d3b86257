"""The organization a request acted in, for its audit event. The audit middleware (`web/audit_trail.py`) opens a
scope for each request it records; the Authorizer (`services/access/authz.py`) notes the first organization it
decides a `require` for; the recorder files the event in that organization's trail. A route that names its
organization only by a resource's id (`DELETE /teams/:id`, `POST /team-workspaces`) is filed where it acted.

The scope is a dict in a context variable: a sync route's worker thread runs in a copy of the request's context,
which holds the same dict, so what it notes the middleware reads. Below every area (imports none)."""

from __future__ import annotations

from contextvars import ContextVar, Token
from typing import Any

_SCOPE: ContextVar[dict[str, Any] | None] = ContextVar("terrace_audit_scope", default=None)


def open_scope(holder: dict[str, Any]) -> Token[dict[str, Any] | None]:
    return _SCOPE.set(holder)


def close_scope(token: Token[dict[str, Any] | None]) -> None:
    _SCOPE.reset(token)


def note_organization(key: str, workspace_id: str | None = None) -> None:
    """The first organization a request was authorized in (or refused in): its audit event's; and the first
    workspace, which a route naming a workspace by its name (the web UI's) is about."""
    scope = _SCOPE.get()
    if scope is None:
        return
    if key and "organization" not in scope:
        scope["organization"] = key
    if workspace_id and "workspace" not in scope:
        scope["workspace"] = workspace_id
