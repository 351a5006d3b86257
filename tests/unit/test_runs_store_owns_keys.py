"""The runs area reaches the table only through its store: no module of `services/runs/` but the run store
(`store.py` and its `store_<part>.py` modules) imports the table port, and the runs area's domain modules hold no
storage keys (their items are mapped by the store)."""

from __future__ import annotations

import ast
from pathlib import Path

from test_layer_rule import PACKAGE, imports_of

RUNS = PACKAGE / "services" / "runs"
KEY_NAMES = {"pk", "sk", "gsi1pk", "gsi1sk"}
DOMAIN_WITHOUT_KEYS = ("runs.py", "task_stages.py", "run_tasks.py", "comments.py", "configuration_versions.py")


def _is_store(path: Path) -> bool:
    return path.name == "store.py" or path.name.startswith("store_")


def test_only_the_run_store_imports_the_table_port() -> None:
    found = [
        f"services/runs/{path.name}:{line} imports {module}"
        for path in sorted(RUNS.glob("*.py"))
        if not _is_store(path)
        for line, module in imports_of(path)
        if module == "terrace.adapters.table" or module.startswith("terrace.adapters.table.")
    ]
    assert found == []


def test_the_runs_domain_modules_hold_no_storage_keys() -> None:
    found = [
        f"domain/{name}:{node.lineno} {node.value!r}"
        for name in DOMAIN_WITHOUT_KEYS
        for node in ast.walk(ast.parse((PACKAGE / "domain" / name).read_text()))
        if isinstance(node, ast.Constant) and node.value in KEY_NAMES
    ]
    assert found == []
