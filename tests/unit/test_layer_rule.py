"""The layer rule of ARCHITECTURE.md, read from the imports of the code (every import, also those inside
functions and under TYPE_CHECKING):

- service areas depend downward only: access <- workspaces <- {state, runs} <- admin, and runs <- notifications,
  runs <- policies; state and runs are siblings and import nothing of each other; the use cases
  (`services/workflows/`) sit above every area and no area imports them; the shared modules at the top of
  `services/` (`events.py`, `blob_records.py`) import no area;
- `services/` and `domain/` import nothing of the entrypoints or the web framework (`terrace.web`, fastapi,
  starlette), nor the composition root (`terrace.bootstrap`, `terrace.wiring`); `domain/` imports no service;
- boto3 and botocore are imported only in `adapters/` and `wiring/`;
- only stores (`services/<area>/store.py`, `store_*.py`, and `services/shared_keys.py`'s users among them) import
  the table port (beside `adapters/`, `wiring/` and `bootstrap.py`); other modules may catch its `ConditionFailed`,
  the signal of a lost conditional write, and nothing else of it; `domain/` names no storage key.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "layers" / "terrace"

# what each area may import besides itself
AREAS: dict[str, set[str]] = {
    "access": set(),
    "workspaces": {"access"},
    "state": {"access", "workspaces"},
    "runs": {"access", "workspaces"},
    "admin": {"access", "workspaces", "state", "runs"},
    "notifications": {"access", "workspaces", "runs"},
    "policies": {"access", "workspaces", "runs"},  # policy as code reads runs (their task stages, policy checks)
    "registry": {"access"},  # the private registry: an organization's modules
    "audit": {"access"},  # the audit trail: its reads are checked by the access area's Authorizer
    "vcs": {"access", "workspaces", "runs"},  # VCS-driven runs: connections, webhooks, configuration versions
    "hyok": {"access", "workspaces"},  # Hold Your Own Key: OIDC and HYOK configurations (agent pools: workspaces)
    "workflows": {
        *("access", "workspaces", "state", "runs", "admin", "notifications", "policies", "registry", "audit", "vcs"),
        "hyok",
    },
}
NOT_BELOW_ENTRYPOINTS = ("terrace.web", "fastapi", "starlette", "terrace.bootstrap", "terrace.wiring")
AWS_SDK = ("boto3", "botocore")


def _under(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def imports_of(path: Path) -> Iterator[tuple[int, str]]:
    """(line, module) of every import in a file; `from terrace.services import runs` counts as
    `terrace.services.runs`."""
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.lineno, node.module
            for alias in node.names:
                yield node.lineno, f"{node.module}.{alias.name}"


def files(folder: str) -> list[Path]:
    return sorted((PACKAGE / folder).rglob("*.py"))


def area_of_module(module: str) -> str | None:
    """The area (or `workflows`, or `shared` for services/<module>.py) a `terrace.services...` module is in."""
    if not _under(module, "terrace.services"):
        return None
    parts = module.split(".")
    if len(parts) < 3:
        return None  # the package itself
    return parts[2] if parts[2] in AREAS else "shared"


def area_violations(path: Path, imports: list[tuple[int, str]]) -> list[str]:
    relative = path.relative_to(PACKAGE / "services")
    own = relative.parts[0] if len(relative.parts) > 1 else "shared"
    allowed = AREAS.get(own, set())
    found = []
    for line, module in imports:
        target = area_of_module(module)
        if target is None or target == own or target == "shared" and own != "shared":
            continue
        if target not in allowed:
            found.append(f"services/{relative}:{line} ({own}) imports {module} ({target})")
    return found


def upward_area_imports() -> list[str]:
    found: list[str] = []
    for path in files("services"):
        found += area_violations(path, list(imports_of(path)))
    return sorted(set(found))


def test_service_areas_import_downward_only() -> None:
    assert upward_area_imports() == []


def test_services_and_domain_import_no_entrypoint_framework_or_composition_root() -> None:
    found = [
        f"{path.relative_to(PACKAGE)}:{line} imports {module}"
        for folder in ("services", "domain")
        for path in files(folder)
        for line, module in imports_of(path)
        if any(_under(module, forbidden) for forbidden in NOT_BELOW_ENTRYPOINTS)
    ]
    assert found == []


def test_domain_imports_no_service() -> None:
    found = [
        f"{path.relative_to(PACKAGE)}:{line} imports {module}"
        for path in files("domain")
        for line, module in imports_of(path)
        if _under(module, "terrace.services")
    ]
    assert found == []


TABLE_PORT = "terrace.adapters.table"
# `limits.py` names DynamoDB's key attributes only to bound their sizes (`KEY_MAX_BYTES`); it stores nothing
KEY_NAMES_ALLOWED = {"limits.py"}


def _is_store(path: Path) -> bool:
    relative = path.relative_to(PACKAGE)
    if relative.parts[0] in ("adapters", "wiring") or relative == Path("bootstrap.py"):
        return True
    return relative.parts[0] == "services" and (path.name == "store.py" or path.name.startswith("store_"))


def test_only_stores_import_the_table_port() -> None:
    offenders = []
    for path in files("."):
        if _is_store(path):
            continue
        for line, module in imports_of(path):
            if _under(module, TABLE_PORT) and module not in (TABLE_PORT, f"{TABLE_PORT}.ConditionFailed"):
                offenders.append(f"{path.relative_to(PACKAGE)}:{line}: {module}")
            elif module == TABLE_PORT and path.read_text().count("import terrace.adapters.table"):
                offenders.append(f"{path.relative_to(PACKAGE)}:{line}: {module}")
    assert offenders == [], "only stores import the table port:\n" + "\n".join(offenders)


def test_domain_names_no_storage_key() -> None:
    names = ('"pk"', '"sk"', '"gsi1pk"', '"gsi1sk"')
    offenders = [
        f"domain/{path.name}: {name}"
        for path in files("domain")
        if path.name not in KEY_NAMES_ALLOWED
        for name in names
        if name in path.read_text()
    ]
    assert offenders == [], "storage keys live in the stores:\n" + "\n".join(offenders)


def test_boto3_only_in_adapters_and_wiring() -> None:
    found = [
        f"{path.relative_to(PACKAGE)}:{line} imports {module}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.relative_to(PACKAGE).parts[0] not in ("adapters", "wiring")
        for line, module in imports_of(path)
        if any(_under(module, sdk) for sdk in AWS_SDK)
    ]
    assert found == []


# the checker itself ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("file", "module", "bad"),
    [
        ("workspaces/purge.py", "terrace.services.state.versions", True),  # sideways-up: the old purge
        ("workspaces/retention_sweep.py", "terrace.services.runs.store", True),
        ("access/team_access.py", "terrace.services.workspaces.workspaces", True),
        ("runs/reaper.py", "terrace.services.workflows.retention_sweep", True),  # no area imports a use case
        ("state/versions.py", "terrace.services.runs.store", True),  # siblings
        ("runs/jobs.py", "terrace.services.state", True),  # `from terrace.services import state`
        ("events.py", "terrace.services.runs.store", True),  # shared modules sit below every area
        ("runs/runs.py", "terrace.services.workspaces.workspaces", False),
        ("runs/logs.py", "terrace.services.blob_records", False),
        ("workflows/purge.py", "terrace.services.state.versions", False),
        ("admin/site.py", "terrace.services.runs.store", False),
    ],
)
def test_the_checker_tells_downward_from_upward(file: str, module: str, bad: bool) -> None:
    assert bool(area_violations(PACKAGE / "services" / file, [(1, module)])) is bad
