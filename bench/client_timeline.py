"""Who a remote run's seconds belong to: the CLI's own schedule, or waiting on Terrace.

terraform's remote backend (and the `cloud` block, and OpenTofu's) polls on its own clock: it sleeps 0.5 s before
it first reads an uploaded configuration version, 1 s after creating a run before it first reads it, 1 s before it
first reads a cost estimate, and 1 s after an apply is confirmed before it reads the run again (`backoff(1000,
3000, i)` in its backend_common.go; go-tfe's log reader sleeps 0.5-2 s after an empty read). No server can make
those first sleeps shorter. What a server decides is (a) how long each of the CLI's requests takes, held log reads
included (they wait for the runner), and (b) whether each poll finds what the CLI waits for, or sends it to sleep
for another round.

`Recorder` wraps the app (an ASGI wrapper, `LocalStack(wrap_app=...)`) and records every request; `split` takes one
CLI invocation's window and returns Terrace's share — the CLI's requests in flight plus the sleep after every poll
that found nothing new — and the CLI's own time, the rest.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
ASGIApp = Callable[[Scope, Callable[[], Awaitable[Message]], Callable[[Message], Awaitable[None]]], Awaitable[None]]

CE_FINAL = {"finished", "errored", "canceled", "skipped_due_to_targeting"}
RUN_WAITING = {"pending", "confirmed"}  # waitForRun polls again while a run is in one of these
HELD_READ_S = 1.5  # an empty log read that took this long was held to its end with nothing new


@dataclass(frozen=True)
class Request:
    start: float
    end: float
    method: str
    path: str
    from_cli: bool
    unready: bool  # a poll that found nothing new: the CLI sleeps and polls again


class Recorder:
    def __init__(self) -> None:
        self._auth = b""  # set by `cli_token` once the stack has minted it
        self._lock = threading.Lock()
        self.requests: list[Request] = []

    def cli_token(self, token: str) -> None:
        """The CLI's API token: its requests are told from the runner's (which carry run tokens)."""
        self._auth = f"Bearer {token}".encode()

    def wrap(self, app: ASGIApp) -> ASGIApp:
        async def recorded(scope: Scope, receive: Any, send: Any) -> None:
            if scope["type"] != "http":
                await app(scope, receive, send)
                return
            start = time.time()
            method, path = scope["method"], scope["path"]
            headers = dict(scope.get("headers") or [])
            from_cli = (
                headers.get(b"authorization") == self._auth
                or path.startswith("/api/v2/logs/")  # log-read URLs: only the CLI reads them here
                or (method == "PUT" and path.startswith("/blobs/config/"))  # the CLI's configuration upload
            )
            body = bytearray()

            async def keep(message: Message) -> None:
                if message["type"] == "http.response.body" and len(body) < 1 << 20:
                    body.extend(message.get("body", b""))
                await send(message)

            try:
                await app(scope, receive, keep)
            finally:
                end = time.time()
                unready = from_cli and method == "GET" and _unready(path, bytes(body), end - start)
                with self._lock:
                    self.requests.append(Request(start, end, method, path, from_cli, unready))

        return recorded

    def window(self, start: float, end: float) -> list[Request]:
        with self._lock:
            return sorted((r for r in self.requests if start <= r.start <= end), key=lambda r: r.start)


def _status(body: bytes) -> str:
    try:
        return str(json.loads(body)["data"]["attributes"]["status"])
    except (ValueError, KeyError, TypeError):
        return ""


def _unready(path: str, body: bytes, seconds: float) -> bool:
    parts = path.strip("/").split("/")
    if path.startswith("/api/v2/logs/"):
        return not body and seconds >= HELD_READ_S
    if len(parts) != 4 or parts[:2] != ["api", "v2"]:
        return False
    kind = parts[2]
    if kind == "configuration-versions":
        return _status(body) != "uploaded"
    if kind == "cost-estimates":
        return _status(body) not in CE_FINAL
    if kind == "runs":
        return _status(body) in RUN_WAITING
    return False


def split(recorder: Recorder, start: float, elapsed: float) -> dict[str, float]:
    """One CLI invocation (`start`, `elapsed` seconds): Terrace's share, the CLI's own time, and the polls that
    found nothing new."""
    end = start + elapsed
    cli = [r for r in recorder.window(start, end) if r.from_cli]
    in_flight = _union([(r.start, min(r.end, end)) for r in cli])
    after_unready = 0.0
    for n, request in enumerate(cli):
        if request.unready:
            following = cli[n + 1].start if n + 1 < len(cli) else end
            after_unready += max(0.0, following - request.end)
    terrace = in_flight + after_unready
    return {
        "terrace_s": terrace,
        "cli_own_s": elapsed - terrace,
        "in_flight_s": in_flight,
        "unready_polls": float(sum(r.unready for r in cli)),
        "cli_requests": float(len(cli)),
    }


def _union(intervals: list[tuple[float, float]]) -> float:
    total, reach = 0.0, float("-inf")
    for lo, hi in sorted(intervals):
        if hi <= reach:
            continue
        total += hi - max(lo, reach)
        reach = hi
    return total
