"""In services/policies/ and services/registry/ only the stores import the table port (`terrace.adapters.table`),
and no module of either area but its stores writes a storage key (`"pk"`, `"gsi1pk"`, ...)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "layers" / "terrace"
AREAS = ("services/policies", "services/registry")
STORES = {"store.py", "store_evaluations.py", "store_providers.py"}
KEYS = {"pk", "sk", "gsi1pk", "gsi1sk"}


def _modules() -> list[Path]:
    return sorted(p for area in AREAS for p in (PACKAGE / area).glob("*.py") if p.name not in STORES)


def _imports_table(tree: ast.AST) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "terrace.adapters.table":
            return True
        if (
            isinstance(node, ast.ImportFrom)
            and node.module == "terrace.adapters"
            and any(a.name == "table" for a in node.names)
        ):
            return True
        if isinstance(node, ast.Import) and any(a.name == "terrace.adapters.table" for a in node.names):
            return True
    return False


def _key_literals(tree: ast.AST) -> list[str]:
    """Storage keys named as dict keys or subscripts (`{"pk": ...}`, `item["sk"]`)."""
    found = []
    for node in ast.walk(tree):
        keys = node.keys if isinstance(node, ast.Dict) else [node.slice] if isinstance(node, ast.Subscript) else []
        found += [k.value for k in keys if isinstance(k, ast.Constant) and k.value in KEYS]
    return found


@pytest.mark.parametrize("path", _modules(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_only_the_stores_know_the_table(path: Path) -> None:
    tree = ast.parse(path.read_text())
    assert not _imports_table(tree), f"{path.name} imports the table port: go through the area's store"
    assert _key_literals(tree) == [], f"{path.name} names storage keys: they belong to the area's store"


def test_the_stores_are_there() -> None:
    found = {p.name for area in AREAS for p in (PACKAGE / area).glob("store*.py")}
    assert found == STORES
