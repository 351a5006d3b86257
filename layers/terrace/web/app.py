"""The FastAPI application: mounts the routers of every URL space. Built by `create_app(container)`."""

from __future__ import annotations

from fastapi import FastAPI

from terrace.bootstrap import Container
from terrace.web import errors, static_assets
from terrace.web.middleware import BodyLimit, ExtraHeaders
from terrace.web.routers import (
    accounts,
    configuration_versions,
    discovery,
    http_backend,
    organizations,
    phases,
    resources,
    run_stages,
    runner_api,
    runs,
    state_versions,
    workspaces,
)
from terrace.web.routers.discovery import api_headers
from terrace.web.ui import auth as ui_auth
from terrace.web.ui import organizations as ui_organizations
from terrace.web.ui import runs as ui_runs
from terrace.web.ui import search as ui_search
from terrace.web.ui import settings as ui_settings
from terrace.web.ui import states as ui_states
from terrace.web.ui import tokens as ui_tokens
from terrace.web.ui import variables as ui_variables
from terrace.web.ui import workspaces as ui_workspaces


def create_app(container: Container) -> FastAPI:
    container.settings.require_url_signing_secret()
    app = FastAPI(title="Terrace", docs_url=None, redoc_url=None, openapi_url="/api/openapi.json")
    app.state.container = container
    errors.install(app)

    snapshot_interval_s = container.settings.state_snapshot_interval_s
    app.add_middleware(
        ExtraHeaders,
        prefix="/api/v2",
        headers=api_headers(),
        per_path=lambda path: state_versions.snapshot_headers(path, snapshot_interval_s),
    )
    # outermost: bodies are counted as they stream in (Content-Length or chunked), 413 past the limit
    too_large = lambda detail: errors.error_response(413, "payload too large", detail)  # noqa: E731
    app.add_middleware(BodyLimit, max_bytes=container.settings.max_request_bytes, respond=too_large)
    for module in (discovery, organizations, workspaces, accounts):
        app.include_router(module.router)
    for state_module in (state_versions, resources, http_backend):
        app.include_router(state_module.router)
    for run_module in (configuration_versions, runs, run_stages, phases, runner_api):
        app.include_router(run_module.router)
    ui_auth.install(app)
    for ui_module in (ui_auth, ui_tokens, ui_organizations, ui_workspaces, ui_variables):
        app.include_router(ui_module.router)
    for ui_page in (ui_runs, ui_states, ui_search, ui_settings):
        app.include_router(ui_page.router)
    app.include_router(static_assets.router)
    return app
