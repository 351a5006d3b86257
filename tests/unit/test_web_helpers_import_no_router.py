"""The web layer's helpers (`web/*.py`: serializers, documents, `include=`) sit below the routers: a router imports
them, never the other way round, not even inside a function (a loop hidden by a function-local import). Only the
modules that mount the routers (`app.py`, `api_routes.py`) and the UI's pages may import a router."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

WEB = Path(__file__).resolve().parents[2] / "layers" / "terrace" / "web"
MOUNTING = {"app.py", "api_routes.py"}


def router_imports(source: str) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module:
            if node.module.startswith("terrace.web.routers"):
                found.append(node.module)
            elif node.module == "terrace.web":
                found += [f"terrace.web.{a.name}" for a in node.names if a.name == "routers"]
        elif isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.startswith("terrace.web.routers")]
    return found


@pytest.mark.parametrize("path", sorted(p for p in WEB.glob("*.py") if p.name not in MOUNTING), ids=lambda p: p.name)
def test_a_web_helper_imports_no_router(path: Path) -> None:
    assert router_imports(path.read_text()) == []


def test_the_check_sees_a_function_local_import() -> None:
    source = "def f():\n    from terrace.web.routers.organizations import serialize_organization\n"
    assert router_imports(source) == ["terrace.web.routers.organizations"]
