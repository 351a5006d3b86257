"""Route groups built on first need: the API Lambda's cold start builds the routes of the TFC API, not those of the
web UI and the site admin API (FastAPI analyses every route's signature and parameters as it is added: ~0.3 s for
those two groups).

`LazyRoutes` sits in front of the app: before a request is routed, each group whose URL space holds its path
(and every group, for the OpenAPI document) is included, once. The groups' URL spaces are disjoint from the
routes built eagerly and from each other, so the order they are appended in changes no match."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

from fastapi import FastAPI
from starlette.types import ASGIApp, Receive, Scope, Send

Group = tuple[Callable[[str], bool], Callable[[FastAPI], None]]  # (holds this path?, include the group's routes)


class LazyRoutes:
    def __init__(self, app: ASGIApp, fastapi_app: FastAPI, groups: Sequence[Group]) -> None:
        self.app, self._fastapi_app = app, fastapi_app
        self._pending = list(groups)
        self._lock = threading.Lock()

    def include(self, path: str | None = None) -> None:
        """Include the groups holding `path` (all of them for None)."""
        with self._lock:
            for group in list(self._pending):
                holds, include = group
                if path is None or holds(path):
                    include(self._fastapi_app)
                    self._pending.remove(group)
            if not self._pending:
                self._fastapi_app.openapi_schema = None  # built again with every route

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self._pending and scope["type"] in ("http", "websocket"):
            path = scope.get("path", "")
            self.include(None if path == self._fastapi_app.openapi_url else path)
        await self.app(scope, receive, send)
