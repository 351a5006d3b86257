"""The workspaces area's storage keys live in its stores only (`services/workspaces/store*.py`): no other module of
the area imports the table port (every import, also those inside functions and under TYPE_CHECKING), and the
domain modules of its entities name no storage key (`pk`, `sk`, `gsi1pk`, `gsi1sk`) nor map an item."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "layers" / "terrace"
AREA = PACKAGE / "services" / "workspaces"
PORT = "terrace.adapters.table"
DOMAIN = ("workspace", "variables", "varsets", "tags", "ssh_keys", "retention", "run_triggers", "auto_destroy",
          "agent_pools")  # fmt: skip
KEYS = ("pk", "sk", "gsi1pk", "gsi1sk")


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
    return found


def test_only_the_stores_of_the_area_import_the_table_port() -> None:
    modules = sorted(AREA.glob("*.py"))
    stores = [path.name for path in modules if path.name.startswith("store")]
    assert "store.py" in stores
    offenders = [path.name for path in modules if not path.name.startswith("store") and PORT in _imports(path)]
    assert offenders == []


def test_the_area_s_domain_modules_name_no_storage_key() -> None:
    offenders = []
    for name in DOMAIN:
        path = PACKAGE / "domain" / f"{name}.py"
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Constant) and node.value in KEYS:
                offenders.append(f"{name}.py:{node.lineno}: {node.value!r}")
            if isinstance(node, ast.FunctionDef) and node.name in ("to_item", "from_item", "marker_item"):
                offenders.append(f"{name}.py:{node.lineno}: def {node.name}")
    assert offenders == []
