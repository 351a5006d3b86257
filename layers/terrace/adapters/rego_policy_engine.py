"""The policy engine on rego-cpp (`regopy`), each call in a child process of its own (`rego_child.py`).

Three bounds, each ending only the child: its CPU time (RLIMIT_CPU, set by the child before it loads the engine),
its resident memory (watched here from /proc every few milliseconds: the engine's allocator reserves a huge
address space up front, so an address-space rlimit cannot bound it) and the wall-clock time; past any of them the
child is killed and the evaluation fails with a message saying which. The server process never runs Rego.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from typing import Any

from terrace.adapters.policy_engine import EngineResult, QueryResult

CHILD = [sys.executable, "-m", "terrace.adapters.rego_child"]
WATCH_S = 0.02
PAGE = os.sysconf("SC_PAGE_SIZE")


def _resident_bytes(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/statm") as statm:
            return int(statm.read().split()[1]) * PAGE
    except (OSError, ValueError, IndexError):
        return 0


class RegoPolicyEngine:
    def __init__(
        self,
        *,
        timeout_s: float = 10.0,
        memory_bytes: int = 512 * 1024 * 1024,
        cpu_s: int = 10,
        child: Sequence[str] = tuple(CHILD),
    ) -> None:
        """`child`: the command that runs `rego_child.py` (this interpreter; `tools/arm64_rego_check.py` runs it on an
        emulated arm64 one)."""
        self.timeout_s, self.memory_bytes, self.cpu_s, self.child = timeout_s, memory_bytes, cpu_s, list(child)

    def check(self, modules: Mapping[str, str]) -> str | None:
        return self._run(modules, [], None, None).error

    def evaluate(
        self, modules: Mapping[str, str], queries: Sequence[str], input_doc: Any, data: Any = None
    ) -> EngineResult:
        return self._run(modules, queries, input_doc, data)

    def _run(self, modules: Mapping[str, str], queries: Sequence[str], input_doc: Any, data: Any) -> EngineResult:
        request = json.dumps(
            {
                "modules": dict(modules),
                "queries": list(queries),
                "input": input_doc,
                "data": data,
                "limits": {"cpu_s": self.cpu_s},
            }
        ).encode()
        child = subprocess.Popen(  # noqa: S603 - this interpreter and our own module
            self.child, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
        )
        try:
            stdout, stopped = self._watch(child, request)
        finally:
            if child.poll() is None:
                child.kill()
                child.wait()
        if stopped:
            return EngineResult(error=stopped)
        if child.returncode != 0 or not stdout.strip():
            return EngineResult(error=_died(child.returncode))
        answer = json.loads(stdout)
        if answer.get("error"):
            return EngineResult(error=str(answer["error"]))
        return EngineResult(
            results=tuple(
                QueryResult(query=r["query"], defined=r["defined"], value=r.get("value"), error=r.get("error"))
                for r in answer.get("results", [])
            )
        )

    def _watch(self, child: subprocess.Popen[bytes], request: bytes) -> tuple[bytes, str | None]:
        """The child's stdout, or why it was stopped (over its memory or its wall-clock time)."""
        deadline = time.monotonic() + self.timeout_s
        pending: bytes | None = request
        while True:
            try:
                stdout, _ = child.communicate(pending, timeout=WATCH_S)
                return stdout, None
            except subprocess.TimeoutExpired:
                pending = None  # communicate() keeps feeding what it was first given
            if _resident_bytes(child.pid) > self.memory_bytes:
                child.kill()
                return (
                    b"",
                    f"the policy evaluation used more than {self.memory_bytes // (1024 * 1024)} MiB and was stopped",
                )
            if time.monotonic() > deadline:
                child.kill()
                return b"", f"the policy evaluation took longer than {self.timeout_s:g} s and was stopped"


def _died(returncode: int | None) -> str:
    if returncode in (-signal.SIGXCPU, -signal.SIGKILL):
        return "the policy evaluation used more CPU time than allowed and was stopped"
    return f"the policy evaluation failed (the engine exited with {returncode})"
