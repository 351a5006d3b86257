"""Single sign-on for the web UI through the operator's OpenID Connect issuer (`services/access/oidc.py`).

The start binds the sign-in to this browser: a random secret in a short-lived cookie (HttpOnly, Secure,
SameSite=Lax: the issuer's redirect back is a top-level cross-site GET, which Strict would send without it; its path
is the callback's only) that the callback must bring back. The start writes a state row per request and needs no
sign-in, so it is rate-limited per client address (an in-process token bucket, as `web/rate_limit.py`'s: exact
for the one-process server; on AWS per Lambda instance, and the address is the CloudFront edge's, so the API Gateway
stage throttle is the global backstop there). A refused start writes nothing and answers a 429 page.
"""

from __future__ import annotations

import math
import threading
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response

from terrace.domain.errors import NotFound, Unauthenticated
from terrace.services.access.oidc import CALLBACK_PATH, STATE_TTL_S, NotThisBrowser
from terrace.web.audit_trail import note_actor
from terrace.web.deps import ContainerDep
from terrace.web.rate_limit import TokenBuckets
from terrace.web.ui.auth import local_next, session_cookie, sign_in_form
from terrace.web.ui.session import render

router = APIRouter(prefix="/app", include_in_schema=False)

BROWSER_COOKIE = "terrace_oidc_browser"
START_BURST = 20  # sign-ins a client address may start at once ...
START_PER_S = 0.5  # ... and then thirty a minute


class StartLimit:
    """The per-address bucket of sign-in starts; routes run in the thread pool, so taking is locked."""

    def __init__(self, buckets: TokenBuckets | None = None) -> None:
        self.buckets = buckets or TokenBuckets(START_PER_S, burst=START_BURST)
        self._lock = threading.Lock()

    def take(self, address: str) -> float:
        with self._lock:
            return self.buckets.take(f"addr:{address}")


def start_limit(request: Request) -> StartLimit:
    limit: StartLimit | None = getattr(request.app.state, "oidc_start_limit", None)
    if limit is None:  # one per app; a race here at most gives two fresh buckets once
        limit = request.app.state.oidc_start_limit = StartLimit()
    return limit


@router.get("/sign-in/oidc")
def start(request: Request, container: ContainerDep, next: str = "") -> Any:
    if container.oidc is None:
        raise NotFound("single sign-on is not configured")
    wait = start_limit(request).take(request.client.host if request.client else "")
    if wait > 0:
        seconds = max(1, math.ceil(wait))
        detail = f"Too many sign-ins were started from your address. Try again in {seconds} s."
        page = render(request, "error.html", None, status=429, title="too many requests", detail=detail)
        page.headers["Retry-After"] = str(seconds)
        return page
    target, browser = container.oidc.start(local_next(next))
    response = RedirectResponse(target, status_code=303)
    response.set_cookie(
        BROWSER_COOKIE, browser, max_age=STATE_TTL_S, path=CALLBACK_PATH, secure=True, httponly=True, samesite="lax"
    )
    return response


def _drop_browser_cookie(response: Response) -> Response:
    response.delete_cookie(BROWSER_COOKIE, path=CALLBACK_PATH, secure=True, httponly=True, samesite="lax")
    return response


@router.get("/sign-in/oidc/callback")
def callback(request: Request, container: ContainerDep) -> Any:
    if container.oidc is None:
        raise NotFound("single sign-on is not configured")
    try:
        cookie, session, target = container.oidc.finish(dict(request.query_params), request.cookies.get(BROWSER_COOKIE))
        note_actor(request, session.principal)  # the sign-in's audit event names who signed in
    except NotThisBrowser as exc:
        return sign_in_form(request, container, status=400, error=exc.detail)
    except Unauthenticated as exc:  # the cookie stays: it may be of a sign-in this browser started and can finish
        return sign_in_form(request, container, status=401, error=exc.detail)
    return _drop_browser_cookie(session_cookie(RedirectResponse(local_next(target), status_code=303), cookie))
