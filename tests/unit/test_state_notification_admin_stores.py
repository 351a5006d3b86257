"""The state, notification and admin areas reach the table only through their stores: no other module of
`services/state/`, `services/notifications/` or `services/admin/` imports the table port (also not under
TYPE_CHECKING or inside a function), and their domain modules hold no storage keys."""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "layers" / "terrace"
STORES = {
    "state": {"store.py", "store_index.py"},
    "notifications": {"store.py"},
    "admin": {"store.py", "store_settings.py", "store_scim.py"},
}
DOMAIN = ("state_versions.py", "state_index.py", "notifications.py", "notification_payloads.py", "tool_versions.py")
PORT = "terrace.adapters.table"
KEY_NAMES = re.compile(r"""["'](pk|sk|gsi1pk|gsi1sk)["']|\bgsi1\b""")


def _imports_port(path: Path) -> list[int]:
    lines = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import) and any(a.name == PORT or a.name.startswith(PORT + ".") for a in node.names):
            lines.append(node.lineno)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == PORT or node.module.startswith(PORT + "."):
                lines.append(node.lineno)
            elif node.module == "terrace.adapters" and any(a.name == "table" for a in node.names):
                lines.append(node.lineno)
    return lines


def test_only_the_stores_import_the_table_port() -> None:
    found = [
        f"services/{area}/{path.name}:{line}"
        for area, stores in STORES.items()
        for path in sorted((PACKAGE / "services" / area).rglob("*.py"))
        if path.name not in stores
        for line in _imports_port(path)
    ]
    assert found == []


def test_the_stores_are_the_ones_that_do() -> None:
    for area, stores in STORES.items():
        for name in stores:
            assert (PACKAGE / "services" / area / name).is_file()
    assert _imports_port(PACKAGE / "services" / "state" / "store.py")


def test_their_domain_modules_hold_no_storage_keys() -> None:
    found = [
        f"domain/{name}:{number}: {line.strip()}"
        for name in DOMAIN
        for number, line in enumerate((PACKAGE / "domain" / name).read_text().splitlines(), 1)
        if KEY_NAMES.search(line) or "_item(" in line
    ]
    assert found == []


def test_the_checker_sees_each_form_of_import(tmp_path: Path) -> None:
    for text in (
        "from terrace.adapters.table import Table\n",
        "import terrace.adapters.table\n",
        "from terrace.adapters import table\n",
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from terrace.adapters.table import WriteOp\n",
        "def f():\n    from terrace.adapters.table import Put\n",
    ):
        path = tmp_path / "m.py"
        path.write_text(text)
        assert _imports_port(path), text
    (tmp_path / "m.py").write_text("from terrace.adapters.blobs import BlobStore\n")
    assert _imports_port(tmp_path / "m.py") == []
