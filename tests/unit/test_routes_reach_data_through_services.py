"""Every route reaches data only through a service that checks the principal: no endpoint of the app (API,
runner protocol, http backend, web UI), none of its dependencies, and no `terrace.web` function they call
touches a store or an adapter of the container (`container.table`, `container.blobs`, `container.run_store`,
`container.job_queue`, ...).

The store and adapter attributes are read from `bootstrap.Container`: its dataclass fields (the adapters; not
`settings`) and the cached properties it builds whose type is an adapter port (`terrace.adapters.*`) or a
store (`...Store`). The check walks each endpoint's source and, through calls it can resolve, the `terrace.web`
functions it calls. The allow-list names the few endpoints that are an adapter's own HTTP face, with the
reason.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import inspect
import sys
import textwrap
import types
import typing
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from app_routes import dependencies as _dependencies
from app_routes import qualified_name as _name
from app_routes import routes as _routes
from fastapi import FastAPI
from fastapi.routing import APIRoute
from terrace.bootstrap import Container, build_embedded
from terrace.config import Settings
from terrace.web.app import create_app

# endpoint -> why it may touch an adapter
ALLOWED = {
    "terrace.web.blob_urls.download": "the embedded blob store's own signed GET URLs (no principal: the signature)",
    "terrace.web.blob_urls.upload": "the embedded blob store's own signed PUT URLs (no principal: the signature)",
}


def _annotation_names(func: Callable[..., Any]) -> dict[str, Any]:
    """The globals of `func`'s module and the names it imports for type checking only (the wiring imports each
    service where it builds it: `if TYPE_CHECKING:` holds what its annotations name)."""
    module = sys.modules[func.__module__]
    names = dict(vars(module))
    for node in ast.parse(inspect.getsource(module)).body:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            exec(compile(ast.Module(body=node.body, type_ignores=[]), str(module.__file__), "exec"), names)
    return names


def store_and_adapter_attributes() -> set[str]:
    names = {f.name for f in dataclasses.fields(Container)} - {"settings"}
    for name, member in inspect.getmembers(Container):
        if not isinstance(member, functools.cached_property):
            continue
        returned = typing.get_type_hints(member.func, globalns=_annotation_names(member.func)).get("return")
        module = getattr(returned, "__module__", "")
        if module.startswith("terrace.adapters") or getattr(returned, "__name__", "").endswith("Store"):
            names.add(name)
    return names


def _containers(tree: ast.AST) -> set[str]:
    """Names that hold the container: `container`, parameters typed `Container`/`ContainerDep`, and names
    assigned from `....container` (`request.app.state.container`)."""
    names = {"container"}
    for node in ast.walk(tree):
        if isinstance(node, ast.arg) and node.annotation is not None:
            if ast.unparse(node.annotation).split(".")[-1] in ("Container", "ContainerDep"):
                names.add(node.arg)
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Attribute) and node.value.attr == "container":
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    return names


def touches(func: Callable[..., Any], forbidden: set[str], seen: set[Any] | None = None) -> list[str]:
    """`module.function: container.<attr>` for each store or adapter `func` touches, itself or through the
    `terrace.web` functions it calls."""
    seen = set() if seen is None else seen
    func = inspect.unwrap(func)
    if func in seen or not inspect.isfunction(func) or not func.__module__.startswith("terrace.web"):
        return []
    seen.add(func)
    tree = ast.parse(textwrap.dedent(inspect.getsource(func)))
    holders = _containers(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in forbidden:
            holder = node.value
            if (isinstance(holder, ast.Name) and holder.id in holders) or (
                isinstance(holder, ast.Attribute) and holder.attr == "container"
            ):
                found.append(f"{_name(func)}: {ast.unparse(node)}")
        elif isinstance(node, ast.Call):
            callee = _resolve(func, node.func)
            if callee is not None:
                found += touches(callee, forbidden, seen)
    return found


def _resolve(func: types.FunctionType, expr: ast.expr) -> Any:
    """The object a call's `name` or `module.name` refers to in `func`'s module, when it is that simple."""
    if isinstance(expr, ast.Name):
        return func.__globals__.get(expr.id)
    if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name):
        owner = func.__globals__.get(expr.value.id)
        if isinstance(owner, types.ModuleType):
            return getattr(owner, expr.attr, None)
    return None


@pytest.fixture(scope="module")
def embedded_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FastAPI]:
    data_dir: Path = tmp_path_factory.mktemp("data")
    settings = Settings(table_name="embedded", blob_bucket="embedded", data_dir=str(data_dir), url_signing_secret="s")
    container = build_embedded(settings)  # embedded: the blob URLs are mounted too
    try:
        yield create_app(container)
    finally:
        container.close()


def test_the_forbidden_attributes_are_the_containers_stores_and_adapters() -> None:
    forbidden = store_and_adapter_attributes()
    assert {"table", "blobs", "encryptor", "publisher", "event_queue", "launcher", "job_signal"} <= forbidden
    assert {"run_store", "job_queue"} <= forbidden
    assert not forbidden & {"settings", "runs", "workspaces", "state_versions", "plans", "run_queries", "authz"}


def test_no_route_touches_a_store_or_an_adapter(embedded_app: FastAPI) -> None:
    forbidden = store_and_adapter_attributes()
    routes = list(_routes(embedded_app.router.routes))
    assert len(routes) > 100
    found: list[str] = []
    for route in routes:
        if _name(route.endpoint) in ALLOWED:
            continue
        calls = [route.endpoint]
        if isinstance(route, APIRoute):
            calls += list(_dependencies(route.dependant))
        for call in calls:
            found += touches(call, forbidden)
    assert sorted(set(found)) == []


def test_the_allow_list_names_only_routes_that_exist(embedded_app: FastAPI) -> None:
    assert set(ALLOWED) <= {_name(route.endpoint) for route in _routes(embedded_app.router.routes)}


# the checker itself ----------------------------------------------------------------------------
def _direct(container: Any) -> Any:
    return container.run_store.events("run-1")


def _through_a_helper(container: Any) -> Any:
    return _direct(container), container.blobs.presign_get("k", 1)


def _clean(container: Any) -> Any:
    return container.runs.get(None, "run-1"), container.settings.presign_ttl_s


def test_the_checker_sees_direct_and_nested_touches(monkeypatch: pytest.MonkeyPatch) -> None:
    forbidden = store_and_adapter_attributes()
    for func in (_direct, _through_a_helper, _clean):
        monkeypatch.setattr(func, "__module__", "terrace.web.example")
    assert touches(_direct, forbidden) == ["terrace.web.example._direct: container.run_store"]
    assert sorted(touches(_through_a_helper, forbidden)) == [
        "terrace.web.example._direct: container.run_store",
        "terrace.web.example._through_a_helper: container.blobs",
    ]
    assert touches(_clean, forbidden) == []
