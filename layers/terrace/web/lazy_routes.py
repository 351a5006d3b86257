"""Route groups built on first need: the API Lambda's cold start builds the routes its first request may match,
not the ~270 routes of the TFC API, the web UI and the site admin API (FastAPI analyses every route's signature
and parameters as its module is imported and again as a request first walks its router: ~1 s on a cold start).

`LazyRoutes` sits in front of the app: before a request is routed, each group whose URL space may hold its path
(and every group, for the OpenAPI document) is included, once. The app's routes are then kept in the order of
an eager app (the routes it had when it started, then each group's in the order of `groups`), so a request is
matched against the same routes in the same order as in the eager app whichever groups came before it."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

from fastapi import FastAPI
from starlette.routing import BaseRoute
from starlette.types import ASGIApp, Receive, Scope, Send

Group = tuple[Callable[[str], bool], Callable[[FastAPI], None]]  # (may hold this path?, include the group's routes)


class LazyRoutes:
    def __init__(self, app: ASGIApp, fastapi_app: FastAPI, groups: Sequence[Group]) -> None:
        self.app, self._fastapi_app = app, fastapi_app
        self._groups = list(groups)
        self._started: list[BaseRoute] = list(fastapi_app.router.routes)  # the routes built eagerly come first
        self._included: dict[int, list[BaseRoute]] = {}  # group index -> the routes it added
        self._lock = threading.Lock()

    @property
    def pending(self) -> bool:
        return len(self._included) < len(self._groups)

    def include(self, path: str | None = None) -> None:
        """Include the groups that may hold `path` (all of them for None)."""
        with self._lock:
            router = self._fastapi_app.router
            added = False
            for index, (holds, include) in enumerate(self._groups):
                if index in self._included or (path is not None and not holds(path)):
                    continue
                before = len(router.routes)
                include(self._fastapi_app)
                self._included[index] = router.routes[before:]
                added = True
            if not added:
                return
            ordered = self._started + [route for index in sorted(self._included) for route in self._included[index]]
            router.routes = ordered  # a new list: a request routed meanwhile walks the one it started with
            mark_changed = getattr(router, "_mark_routes_changed", None)
            if mark_changed is not None:
                mark_changed()
            if not self.pending:
                self._fastapi_app.openapi_schema = None  # built again with every route

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.pending and scope["type"] in ("http", "websocket"):
            path = scope.get("path", "")
            self.include(None if path == self._fastapi_app.openapi_url else path)
        await self.app(scope, receive, send)
