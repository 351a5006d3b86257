"""The access area reaches the table only through its store: no module of `services/access/` but the store's parts
(`store.py`, `store_*.py`) imports the table port, so its keys and item layouts live in one place."""

from __future__ import annotations

import ast
from pathlib import Path

import terrace

ACCESS = Path(terrace.__file__).parent / "services" / "access"
PORT = "terrace.adapters.table"


def _imports_the_port(path: Path) -> bool:
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == PORT or (
                node.module == "terrace.adapters" and any(a.name == "table" for a in node.names)
            ):
                return True
        if isinstance(node, ast.Import) and any(alias.name == PORT for alias in node.names):
            return True
    return False


def test_only_the_access_store_imports_the_table_port() -> None:
    importers = {path.name for path in ACCESS.glob("*.py") if _imports_the_port(path)}
    stores = {path.name for path in ACCESS.glob("store*.py")}
    assert importers - stores == set()
    assert importers >= {"store.py", "store_accounts.py", "store_sign_in.py", "store_organizations.py"}
