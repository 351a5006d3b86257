"""The tenant-code rule, read from the code: no module of the `terrace` package starts a process (`subprocess`,
`multiprocessing`, `pty`, `os.system`/`popen`/`exec*`/`spawn*`/`fork*`/`posix_spawn*`, asyncio's subprocesses, a
process pool) but the few below. Tenant-supplied code (a policy, an uploaded module's HCL, and whatever comes
next) runs through `adapters/tenant_process.py` only: an empty environment, no inherited descriptor, its own process
group, CPU/memory/time limits. A run's terraform runs in the runner's own sandbox.

The allow-list may only shrink: a new entry means a new way of starting processes, which the next feature that
runs tenant code must not have.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "layers" / "terrace"

ALLOWED = {
    "adapters/tenant_process.py": "the one way tenant-supplied code runs in the server (policies, uploaded HCL)",
    "adapters/local_runner_launcher.py": "starts Terrace's own runner (`python -m terrace.runner`) on the embedded "
    "server, with the environment `local/workers.py: runner_env` builds (no server secret); the runner's jobs run "
    "in its sandbox below",
    "runner/process.py": "the runner's sandbox: terraform with an environment built from scratch "
    "(`runner/rundir.py: child_env`), its own process group, a job uid and PID namespace",
    "runner/sandbox.py": "the runner's sandbox: probes `unshare`, kills a job uid's processes (`setpriv kill -9 -1`)",
    "runner/commands.py": "the runner asks the terraform binary the operator installed for its version (PATH and "
    "CHECKPOINT_DISABLE only)",
}
MAX_ALLOWED = 5  # may only go down

MODULES = ("subprocess", "multiprocessing", "pty", "pexpect", "sh", "plumbum")
OS_CALLS = ("system", "popen", "fork", "forkpty", "posix_spawn", "posix_spawnp", "exec", "spawn")
ATTRIBUTES = ("create_subprocess_exec", "create_subprocess_shell", "ProcessPoolExecutor", "subprocess_exec",
              "subprocess_shell")  # fmt: skip


def _os_call(name: str) -> bool:
    return name in OS_CALLS or name.startswith(("exec", "spawn", "posix_spawn"))


def starts(path: Path) -> Iterator[tuple[int, str]]:
    """(line, what) of every way of starting a process the file holds."""
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in MODULES:
                    yield node.lineno, f"import {alias.name}"
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            root = node.module.split(".")[0]
            if root in MODULES:
                yield node.lineno, f"from {node.module} import ..."
            for alias in node.names:
                if (root == "os" and _os_call(alias.name)) or alias.name in ATTRIBUTES:
                    yield node.lineno, f"from {node.module} import {alias.name}"
        elif isinstance(node, ast.Attribute):
            if isinstance(node.value, ast.Name) and node.value.id == "os" and _os_call(node.attr):
                yield node.lineno, f"os.{node.attr}"
            elif node.attr in ATTRIBUTES:
                yield node.lineno, node.attr
        elif isinstance(node, ast.Call) and _dynamic_import(node) in MODULES:
            yield node.lineno, f"import of {_dynamic_import(node)} by name"


def _dynamic_import(call: ast.Call) -> str | None:
    """The top-level module `__import__("x")` / `importlib.import_module("x")` names, when it is written out."""
    name = call.func.id if isinstance(call.func, ast.Name) else getattr(call.func, "attr", None)
    if name not in ("__import__", "import_module") or not call.args:
        return None
    first = call.args[0]
    return first.value.split(".")[0] if isinstance(first, ast.Constant) and isinstance(first.value, str) else None


def _relative(path: Path) -> str:
    return path.relative_to(PACKAGE).as_posix()


def test_only_the_allowed_modules_start_processes() -> None:
    found = {
        f"{_relative(path)}:{line}: {what}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if _relative(path) not in ALLOWED
        for line, what in starts(path)
    }
    rule = "tenant-supplied code runs through adapters/tenant_process.py only (run_module)"
    assert not found, f"{rule}: {', '.join(sorted(found))}"


def test_the_allow_list_only_shrinks() -> None:
    assert len(ALLOWED) <= MAX_ALLOWED
    stale = [name for name in ALLOWED if not (PACKAGE / name).exists() or not list(starts(PACKAGE / name))]
    assert not stale, f"these no longer start processes: take them off the list (and lower MAX_ALLOWED): {stale}"


def test_the_rule_sees_each_way_of_starting_a_process(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import os, subprocess\nfrom os import execv\nimport multiprocessing.pool\nimport asyncio\n"
        "os.system('x')\nos.execvpe('x', [], {})\nos.posix_spawn('x', [], {})\n"
        "asyncio.create_subprocess_exec('x')\nfrom concurrent.futures import ProcessPoolExecutor\n"
        "importlib.import_module('subprocess')\nimportlib.import_module('json')\n"
    )
    whats = {what for _, what in starts(probe)}
    assert whats == {
        "import subprocess", "from os import execv", "import multiprocessing.pool", "os.system", "os.execvpe",
        "os.posix_spawn", "create_subprocess_exec", "from concurrent.futures import ProcessPoolExecutor",
        "import of subprocess by name",
    }  # fmt: skip
