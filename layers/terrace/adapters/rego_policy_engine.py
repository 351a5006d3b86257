"""The policy engine on rego-cpp (`regopy`), each call in a child process of its own (`rego_child.py`), started by
`tenant_process.py` as every evaluation of tenant-supplied code is: an empty environment (so `opa.runtime()`
answers an empty `env`), no inherited descriptor, its own process group killed at the end, and three bounds each
ending only the child: its CPU time, its resident memory and the wall-clock time; past any of them the evaluation
fails with a message saying which. The server process never runs Rego.

rego-cpp (regopy 1.5.2) reaches nothing outside the child: it has no file built-in, and it declares `http.send` and
`net.lookup_ip_addr` without implementing them (they are undefined: `tests/unit/test_rego_engine.py`).
`opa.runtime()` is left to policies (they read its `version`); its `env` is the child's, which is empty.
"""

from __future__ import annotations

import functools
import hashlib
import json
import platform
import sys
from collections.abc import Mapping, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

from terrace.adapters import tenant_process
from terrace.adapters.policy_engine import EngineResult, QueryResult

CHILD_MODULE = "terrace.adapters.rego_child"
DISTRIBUTION = "regopy"
ARCHS = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64"}


@functools.cache
def release() -> dict[str, Any] | None:
    """The engine this build evaluates policies with, as a tool version record's attributes (the site admin's
    `opa-versions` lists it, official and enabled): the installed regopy distribution's version, its source URL (its
    own metadata), and the SHA-256 of its native library (read once per process, without loading it); None when the
    engine is not installed here."""
    try:
        dist = metadata.distribution(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return None
    urls = dict(entry.split(", ", 1) for entry in dist.metadata.get_all("Project-URL") or [] if ", " in entry)
    url = urls.get("Source") or dist.metadata["Home-page"] or ""
    libraries = sorted(str(f) for f in dist.files or [] if Path(str(f)).suffix == ".so")
    if not libraries or not url:
        return None
    digest = hashlib.sha256()
    with Path(str(dist.locate_file(libraries[0]))).open("rb") as library:
        for chunk in iter(lambda: library.read(1024 * 1024), b""):
            digest.update(chunk)
    sha = digest.hexdigest()
    arch = {"url": url, "sha": sha, "os": sys.platform, "arch": ARCHS.get(platform.machine(), platform.machine())}
    return {"version": dist.version, "url": url, "sha": sha, "official": True, "enabled": True, "archs": [arch]}


class RegoPolicyEngine:
    def __init__(
        self,
        *,
        timeout_s: float = 10.0,
        memory_bytes: int = 512 * 1024 * 1024,
        cpu_s: int = 10,
        python: Sequence[str] = (sys.executable,),
        path: str | None = None,
    ) -> None:
        """`python`, `path`: the interpreter that runs `rego_child.py` and its `PYTHONPATH` (this interpreter and
        its `sys.path`; `tools/arm64_rego_check.py` runs an emulated arm64 one)."""
        self.limits = tenant_process.Limits(cpu_s=cpu_s, memory_bytes=memory_bytes, timeout_s=timeout_s)
        self.python, self.path = tuple(python), path

    def check(self, modules: Mapping[str, str]) -> str | None:
        return self._run(modules, [], None, None).error

    def evaluate(
        self, modules: Mapping[str, str], queries: Sequence[str], input_doc: Any, data: Any = None
    ) -> EngineResult:
        return self._run(modules, queries, input_doc, data)

    def _run(self, modules: Mapping[str, str], queries: Sequence[str], input_doc: Any, data: Any) -> EngineResult:
        request = json.dumps({"modules": dict(modules), "queries": list(queries), "input": input_doc, "data": data})
        outcome = tenant_process.run_module(
            CHILD_MODULE, request.encode(), self.limits, python=self.python, path=self.path
        )
        if outcome.stopped is not None:
            return EngineResult(error=self._stopped(outcome.stopped))
        if outcome.returncode != 0 or not outcome.stdout.strip():
            return EngineResult(error=f"the policy evaluation failed (the engine exited with {outcome.returncode})")
        answer = json.loads(outcome.stdout)
        if answer.get("error"):
            return EngineResult(error=str(answer["error"]))
        return EngineResult(
            results=tuple(
                QueryResult(query=r["query"], defined=r["defined"], value=r.get("value"), error=r.get("error"))
                for r in answer.get("results", [])
            )
        )

    def _stopped(self, why: str) -> str:
        if why == "memory":
            mib = self.limits.memory_bytes // (1024 * 1024)
            return f"the policy evaluation used more than {mib} MiB and was stopped"
        if why == "time":
            return f"the policy evaluation took longer than {self.limits.timeout_s:g} s and was stopped"
        return "the policy evaluation used more CPU time than allowed and was stopped"
