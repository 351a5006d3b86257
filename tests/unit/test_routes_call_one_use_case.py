"""Routes decode, call one use case or service, and serialize: a workflow that spans services is a use case
(`services/workflows/`) or a service method, not a sequence of calls in a router.

Measured as the architecture review (issue 21) measured it: the distinct services of the container (`container.<name>`,
not `settings`) that a route's endpoint and the helpers of its own module use. Three or more fails, except for
the routes listed below, each with why it still does (reads that compose a page or a document of one area and
the permissions shown with it). The list may only shrink: a listed route that no longer calls three fails too.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
import types
from typing import Any

import pytest
from app_routes import qualified_name as _name
from app_routes import routes as _routes
from fastapi import FastAPI
from terrace.bootstrap import build_memory
from terrace.web.app import create_app

MAX_SERVICES = 2
STILL_COMPOSED: dict[str, str] = {}


def services_used(func: Any, seen: set[Any] | None = None) -> set[str]:
    """`container.<name>` used by `func` and by the functions of its own module it calls."""
    seen = set() if seen is None else seen
    func = inspect.unwrap(func)
    if func in seen or not inspect.isfunction(func):
        return set()
    seen.add(func)
    tree = ast.parse(textwrap.dedent(inspect.getsource(func)))
    used: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "container":
            used.add(node.attr)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            callee = func.__globals__.get(node.func.id)
            if isinstance(callee, types.FunctionType) and callee.__module__ == func.__module__:
                used |= services_used(callee, seen)
    return used - {"settings"}


@pytest.fixture(scope="module")
def app() -> FastAPI:
    return create_app(build_memory())


def _counts(app: FastAPI) -> dict[str, set[str]]:
    return {
        _name(route.endpoint): services_used(route.endpoint)
        for route in _routes(app.router.routes)
        if _name(route.endpoint).startswith(("terrace.web.routers.", "terrace.web.ui."))
    }


def test_routes_call_at_most_two_services(app: FastAPI) -> None:
    counts = _counts(app)
    assert len(counts) > 100
    over = {name: sorted(used) for name, used in counts.items() if len(used) > MAX_SERVICES}
    assert {name: used for name, used in over.items() if name not in STILL_COMPOSED} == {}


def test_the_list_only_shrinks(app: FastAPI) -> None:
    counts = _counts(app)
    assert [name for name in STILL_COMPOSED if len(counts.get(name, set())) <= MAX_SERVICES] == []


def test_the_workflows_are_one_call(app: FastAPI) -> None:
    counts = _counts(app)
    one_call = {
        "terrace.web.routers.workspaces.delete_workspace": {"workspace_deletion"},
        "terrace.web.routers.workspaces.safe_delete_by_name": {"workspace_deletion"},
        "terrace.web.routers.admin_runs.delete_workspace": {"workspace_deletion"},
        "terrace.web.routers.organizations.delete_organization": {"organization_deletion"},
        "terrace.web.routers.admin.delete_organization": {"organization_deletion"},
        "terrace.web.routers.admin.delete_user": {"admin_users"},
        "terrace.web.ui.states.rollback": {"state_rollback"},
        "terrace.web.ui.workspaces.overview": {"workspace_overview"},
    }
    assert {name: counts[name] for name in one_call} == one_call
