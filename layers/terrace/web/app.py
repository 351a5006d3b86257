"""The FastAPI application: mounts the routers of every URL space. Built by `create_app(container)`."""

from __future__ import annotations

import sys
import threading

from fastapi import APIRouter, FastAPI
from starlette.routing import BaseRoute

from terrace.bootstrap import Container
from terrace.web import errors, fastapi_compat
from terrace.web.api_headers import api_headers
from terrace.web.api_routes import api_groups, include_api
from terrace.web.audit_trail import AuditRequests
from terrace.web.lazy_routes import LazyRoutes
from terrace.web.middleware import BodyLimit, ExtraHeaders, RequestGrants, TrailingSlash
from terrace.web.origin_verify import OriginVerify
from terrace.web.rate_limit import RateLimit, TokenBuckets, limited_headers
from terrace.web.security_headers import SecurityHeaders
from terrace.web.snapshot_headers import snapshot_headers
from terrace.web.ui import error_pages


def create_app(container: Container, lazy: bool = False) -> FastAPI:
    """The app over `container`. `lazy` (the API Lambda): each router of the API (`web/api_routes.py`), the UI's
    routes and the site admin API's are built on the first request that may need them (`web/lazy_routes.py`), not
    on a cold start that serves one request; the routes and their order end the same as the eager app's."""
    container.settings.require_url_signing_secret()
    fastapi_compat.install()  # route analysis without importing pydantic.v1
    app = FastAPI(
        title="Terrace", docs_url=None, redoc_url=None, openapi_url="/api/openapi.json", redirect_slashes=False
    )
    app.state.container = container
    errors.install(app)

    # innermost of all: it reads the route the router matched (`scope["route"]`) once the answer is sent
    app.add_middleware(AuditRequests, recorder=lambda: container.audit_recorder)
    snapshot_interval_s = container.settings.state_snapshot_interval_s
    rate_limit = container.settings.api_rate_limit_per_s
    if rate_limit > 0:  # innermost: its 429 gets the API headers too
        limited = lambda wait: errors.error_response(  # noqa: E731
            429,
            "too many requests",
            f"more than {rate_limit} requests per second with this token; retry in {wait:.3f} s",
            headers=limited_headers(rate_limit, wait),
        )
        # signed log-read URLs carry no token (callers behind one proxy would share an address's bucket): exempt
        app.add_middleware(
            RateLimit, prefix="/api/v2", exempt=("/api/v2/logs/",), buckets=TokenBuckets(rate_limit), respond=limited
        )
    app.add_middleware(
        ExtraHeaders,
        prefix="/api/v2",
        headers=api_headers(rate_limit),
        per_path=lambda path: snapshot_headers(path, snapshot_interval_s),
    )
    app.add_middleware(RequestGrants)
    # outermost: bodies are counted as they stream in (Content-Length or chunked), 413 past the limit
    too_large = lambda detail: errors.error_response(413, "payload too large", detail)  # noqa: E731
    # embedded mode: Terrace serves its own blob URLs (the folder store's module is loaded only where it is used)
    fs_blobs = sys.modules.get("terrace.adapters.fs_blobs")
    serves_blobs = fs_blobs is not None and isinstance(container.blobs, fs_blobs.FsBlobs)
    blob_url_prefixes: tuple[str, ...] = ()
    if serves_blobs:
        from terrace.adapters.fs_blob_urls import URL_PREFIX

        blob_url_prefixes = (URL_PREFIX,)
    app.add_middleware(
        BodyLimit,
        max_bytes=container.settings.max_request_bytes,
        respond=too_large,
        exempt_prefixes=blob_url_prefixes,
    )
    if serves_blobs:
        from terrace.web import blob_urls

        app.router.routes.extend(blob_urls.routes)
    app.add_middleware(TrailingSlash)  # routing and every prefix check see `/path`
    if container.settings.origin_verify:  # on AWS: only CloudFront may call the API
        refuse = lambda: errors.error_response(403, "forbidden", "requests must come through the public URL")  # noqa: E731
        app.add_middleware(OriginVerify, secret=container.settings.origin_verify, respond=refuse)
    app.add_middleware(SecurityHeaders)  # outermost of all: every response, a 413 too, gets them
    error_pages.install(app)
    if lazy:  # in the eager app's order: the API's routers, the UI, the site admin API
        groups = [
            *api_groups(),
            (lambda path: not path.startswith(API_PREFIXES), include_ui),
            (lambda path: path.startswith(ADMIN_PREFIX), include_admin),
        ]
        app.add_middleware(LazyRoutes, fastapi_app=app, groups=groups)
    else:
        app.router.routes.extend(_eager_routes())
    return app


_eager: list[BaseRoute] = []
_eager_lock = threading.Lock()


def _eager_routes() -> list[BaseRoute]:
    """The API's routers, the UI and the site admin API, included once per process and shared by its apps.
    FastAPI analyses an included route's parameters on the first request that walks it, once per inclusion
    (~0.5 s over ~290 routes); the routes hold nothing of an app (a request reaches its container through
    `request.app`), so the apps of one process (`make test` builds hundreds) pay that analysis once."""
    with _eager_lock:
        if not _eager:
            holder = APIRouter()
            include_api(holder)
            include_ui(holder)
            include_admin(holder)
            _eager.extend(holder.routes)
        return _eager


ADMIN_PREFIX = "/api/v2/admin"
API_PREFIXES = ("/api/", "/state/", "/.well-known/", "/oauth/", "/scim/")  # include_ui's pages and assets are elsewhere


def include_ui(app: FastAPI | APIRouter) -> None:
    """The web UI's pages, its static assets and the redirects of `/` and `/app/<org>` (last)."""
    from terrace.web import static_assets
    from terrace.web.ui import agent_pools as ui_agent_pools
    from terrace.web.ui import audit_trail as ui_audit_trail
    from terrace.web.ui import auth as ui_auth
    from terrace.web.ui import explorer as ui_explorer
    from terrace.web.ui import health as ui_health
    from terrace.web.ui import members as ui_members
    from terrace.web.ui import notifications as ui_notifications
    from terrace.web.ui import oidc as ui_oidc
    from terrace.web.ui import org_settings as ui_org_settings
    from terrace.web.ui import org_tokens as ui_org_tokens
    from terrace.web.ui import organizations as ui_organizations
    from terrace.web.ui import policies as ui_policies
    from terrace.web.ui import projects as ui_projects
    from terrace.web.ui import registry as ui_registry
    from terrace.web.ui import run_actions as ui_run_actions
    from terrace.web.ui import run_tasks as ui_run_tasks
    from terrace.web.ui import run_triggers as ui_run_triggers
    from terrace.web.ui import runs as ui_runs
    from terrace.web.ui import search as ui_search
    from terrace.web.ui import settings as ui_settings
    from terrace.web.ui import states as ui_states
    from terrace.web.ui import team_access as ui_team_access
    from terrace.web.ui import teams as ui_teams
    from terrace.web.ui import terraform_login as ui_terraform_login
    from terrace.web.ui import tokens as ui_tokens
    from terrace.web.ui import variables as ui_variables
    from terrace.web.ui import varsets as ui_varsets
    from terrace.web.ui import vcs_providers as ui_vcs_providers
    from terrace.web.ui import version_control as ui_version_control
    from terrace.web.ui import workspaces as ui_workspaces

    for ui_module in (ui_auth, ui_tokens, ui_organizations, ui_workspaces, ui_variables, ui_varsets):
        app.include_router(ui_module.router)
    for ui_page in (
        ui_runs,
        ui_run_actions,
        ui_run_tasks,
        ui_states,
        ui_search,
        ui_explorer,
        ui_settings,
        ui_version_control,
        ui_vcs_providers,
        ui_run_triggers,
        ui_terraform_login,
        ui_oidc,
        ui_notifications,
        ui_policies,
        ui_registry,
        ui_org_tokens,
        ui_org_settings,
        ui_teams,
        ui_members,
        ui_health,
        ui_projects,
        ui_team_access,
        ui_agent_pools,
        ui_audit_trail,
    ):
        app.include_router(ui_page.router)
    app.include_router(ui_vcs_providers.connect_router)  # `/auth/...`: HCP's connect-path and callback-url
    app.include_router(static_assets.router)
    app.include_router(ui_organizations.redirects)  # last: `/app/<org>` must not shadow a page of one segment


def include_admin(app: FastAPI | APIRouter) -> None:
    """The site admin API (/api/v2/admin)."""
    from terrace.web.routers import admin, admin_runs, admin_settings, admin_subscriptions, admin_tools

    modules = (admin, admin_runs, admin_settings, admin_subscriptions, admin_tools)
    for admin_module in modules:  # admin_tools' /{kind} last
        app.include_router(admin_module.router)
