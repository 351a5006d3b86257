"""Services are composed, not wired after the fact: what an area needs of another (a hook, a port) is a constructor
argument the composition root gives when it builds the service, never an attribute it assigns (or a list it
appends to) on a built one. A service built without its wiring fails at once instead of skipping its cleanup.

The local stack (`terrace/local/`) builds its container through the composition root too: the runners' launcher
and the scaler's wake-up are given when the container is built, never attached to the container or a service of it
afterwards."""

from __future__ import annotations

import ast
import importlib
import inspect
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "layers" / "terrace"
COMPOSITION_ROOT = [PACKAGE / "bootstrap.py", *sorted((PACKAGE / "wiring").glob("*.py"))]
LOCAL = sorted((PACKAGE / "local").glob("*.py"))
MUTATORS = {"append", "extend", "insert", "add", "update", "setdefault"}

# the ports each service takes from the composition root: keyword-only, no default
PORTS = [
    ("terrace.services.access.organizations", "OrganizationService", ["check_default_agent_pool"]),
    ("terrace.services.access.teams", "TeamService", ["after_delete"]),
    ("terrace.services.notifications.configurations", "NotificationConfigurations", ["verifier"]),
    ("terrace.services.policies.policies", "PolicyService", ["on_delete"]),
    (
        "terrace.services.runs.configuration_versions",
        "ConfigurationVersionService",
        ["on_uploaded", "on_created", "in_use", "configuration_of_run"],
    ),
    ("terrace.services.runs.runs", "RunService", ["resolve_version", "resolve_variables"]),
    ("terrace.services.runs.jobs", "JobService", ["skip_assessment"]),
    ("terrace.services.runs.scaler", "Scaler", ["wake"]),
    ("terrace.services.workspaces.workspaces", "WorkspaceService", ["settle_terraform_version", "check_agent_pool"]),
    ("terrace.services.workspaces.agent_pools", "AgentPoolService", ["after_tokens_revoked"]),
    ("terrace.services.workspaces.locking", "LockService", ["unlock_checks", "after_release"]),
]


def _is_self(node: ast.expr) -> bool:
    return isinstance(node, ast.Name) and node.id == "self"


def _targets(node: ast.stmt) -> Iterator[ast.expr]:
    if isinstance(node, ast.Assign):
        for target in node.targets:
            yield from ast.walk(target) if isinstance(target, ast.Tuple | ast.List) else [target]
    elif isinstance(node, ast.AugAssign | ast.AnnAssign):
        yield node.target


def post_construction_wiring(source: str) -> list[tuple[int, str]]:
    """Where `source` assigns an attribute of something other than `self`, appends to one, or calls setattr."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.stmt):
            for target in _targets(node):
                if isinstance(target, ast.Attribute) and not _is_self(target.value):
                    found.append((node.lineno, ast.unparse(node)))
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name) and func.id == "setattr":
                found.append((node.lineno, ast.unparse(node)))
            elif (
                isinstance(func, ast.Attribute)
                and func.attr in MUTATORS
                and isinstance(func.value, ast.Attribute)
                and not _is_self(func.value.value)
            ):
                found.append((node.lineno, ast.unparse(node)))
    return found


def _reads_a_container(node: ast.AST, names: set[str]) -> bool:
    return any(
        (isinstance(n, ast.Name) and n.id in names) or (isinstance(n, ast.Attribute) and n.attr == "container")
        for n in ast.walk(node)
    )


def wiring_onto_a_container(source: str) -> list[tuple[int, str]]:
    """Where `source` assigns an attribute of a built container (a name or attribute `container`) or of anything
    taken from one (`scaler = container.scaler`), or calls a mutator (`.append`, ...) on one."""
    tree = ast.parse(source)
    names = {"container"}
    while True:  # the names bound to something read from a container, to a fixed point
        more = {
            target.id
            for node in ast.walk(tree)
            if isinstance(node, ast.Assign) and _reads_a_container(node.value, names)
            for each in node.targets
            for target in (each.elts if isinstance(each, ast.Tuple | ast.List) else [each])
            if isinstance(target, ast.Name)
        }
        if more <= names:
            break
        names |= more
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt):
            for target in _targets(node):
                if isinstance(target, ast.Attribute) and _reads_a_container(target.value, names):
                    found.append((node.lineno, ast.unparse(node)))
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name) and func.id == "setattr" and node.args:
                if _reads_a_container(node.args[0], names):
                    found.append((node.lineno, ast.unparse(node)))
            elif (
                isinstance(func, ast.Attribute)
                and func.attr in MUTATORS
                and isinstance(func.value, ast.Attribute)
                and _reads_a_container(func.value, names)
            ):
                found.append((node.lineno, ast.unparse(node)))
    return found


@pytest.mark.parametrize("path", LOCAL, ids=lambda p: p.relative_to(PACKAGE).as_posix())
def test_the_local_stack_attaches_nothing_to_its_built_container(path: Path) -> None:
    found = wiring_onto_a_container(path.read_text())
    assert not found, "\n".join(f"{path.name}:{line}: {text}" for line, text in found)


@pytest.mark.parametrize(
    "source",
    [
        "container = stack.container\nscaler = container.scaler\ncontainer.launcher = scaler.launcher = launcher",
        "container = stack.container\ncontainer.job_signal.listeners.append(lambda _o: wake.set())",
        "self.container.scaler.launcher = launcher",
        "stack.container.job_signal.listeners.extend(observers)",
        "scaler = self.container.scaler\nsetattr(scaler, 'launcher', launcher)",
    ],
)
def test_the_local_check_sees_wiring_onto_a_built_container(source: str) -> None:
    assert wiring_onto_a_container(source)


def test_the_local_check_leaves_the_stack_and_other_objects_alone() -> None:
    source = (
        "self.container = container = build_embedded(settings, launcher=self.launcher)\n"
        "self._threads.append(thread)\nself._server.should_exit = True\nrecord.args = args\n"
        "os.environ.setdefault(key, value)\nreceived.append(container.event_queue.receive(1))"
    )
    assert wiring_onto_a_container(source) == []


def test_the_scaler_wakes_on_every_enqueue_and_has_the_launcher_it_was_built_with(tmp_path: Path) -> None:
    """One wake-up event, made by the composition root, handed to the job signal and to the scaler; the launcher
    given to `build_embedded` is the container's and its scaler's."""
    from terrace.bootstrap import build_embedded, build_memory
    from terrace.config import Settings

    memory = build_memory()
    assert memory.scaler.wake is memory.scaler_wake
    memory.job_signal.notify("acme")
    assert memory.scaler.wake.is_set()

    launcher = object()
    settings = Settings(table_name="embedded", blob_bucket="embedded", data_dir=str(tmp_path), public_url="https://x")
    embedded = build_embedded(settings, launcher=launcher)  # type: ignore[arg-type]
    try:
        assert embedded.launcher is launcher and embedded.scaler.launcher is launcher
        embedded.job_signal.notify("acme", delay_s=30)  # a delayed enqueue too: the scaler sees it at once
        assert embedded.scaler.wake.is_set()
    finally:
        embedded.close()


@pytest.mark.parametrize("path", COMPOSITION_ROOT, ids=lambda p: p.relative_to(PACKAGE).as_posix())
def test_the_composition_root_assigns_nothing_onto_a_built_service(path: Path) -> None:
    found = post_construction_wiring(path.read_text())
    assert not found, "\n".join(f"{path.name}:{line}: {text}" for line, text in found)


@pytest.mark.parametrize(
    "source",
    [
        "teams = TeamService(t)\nteams.after_delete.append(f)",
        "runs = RunService(s)\nruns.resolve_version = f",
        "self.blobs.replaceable = f",
        "setattr(jobs, 'skip_assessment', f)",
        "a.b, c.d = f, g",
        "svc.count += 1",
    ],
)
def test_the_check_sees_each_way_of_wiring_after_construction(source: str) -> None:
    assert post_construction_wiring(source)


def test_the_check_leaves_construction_and_locals_alone() -> None:
    source = "svc = Service(t, hook=lambda x: self.other.run(x))\nself.cache = svc\nurls[q.name] = u\nitems.append(x)"
    assert post_construction_wiring(source) == []


@pytest.mark.parametrize(("module", "name", "ports"), PORTS, ids=[name for _, name, _ in PORTS])
def test_a_service_takes_its_ports_at_construction(module: str, name: str, ports: list[str]) -> None:
    parameters = inspect.signature(getattr(importlib.import_module(module), name)).parameters
    for port in ports:
        assert port in parameters, f"{name} takes no {port}"
        assert parameters[port].kind is inspect.Parameter.KEYWORD_ONLY, f"{name}.{port} is not keyword-only"
        assert parameters[port].default is inspect.Parameter.empty, f"{name}.{port} has a default: wiring may skip it"


def test_a_service_built_without_its_ports_fails_at_once() -> None:
    from terrace.adapters.memory_table import MemoryTable
    from terrace.services.access.authz import Authorizer
    from terrace.services.access.organizations import OrganizationService
    from terrace.services.access.store_organizations import OrganizationStore
    from terrace.services.access.store_teams import TeamStore
    from terrace.services.access.teams import TeamService

    organizations = OrganizationService(
        OrganizationStore(MemoryTable()), Authorizer(), check_default_agent_pool=lambda org, mode, pool: pool
    )
    with pytest.raises(TypeError, match="after_delete"):
        TeamService(TeamStore(MemoryTable()), Authorizer(), organizations)  # type: ignore[call-arg]
