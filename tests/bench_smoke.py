"""Every benchmark once at its smallest size (`python -m bench --smoke --only NAME`), so that a change that breaks a
benchmark fails `make test`, not the next `make bench` (which once exited 1 for weeks: a benchmark patched a method
a refactor had renamed). No figure is asserted: the smoke size's figures mean nothing.

Each runs in an interpreter of its own, as `make bench` runs it: moto's backends are process-wide (a benchmark's
stack would share them with the test worker's, and a later test's `mock_aws` resets them), and `python -m bench`
points its file descriptors 1 and 2 at its log. The benchmarks that start runners and drive terraform are smoke-run
in tests/e2e, the others (moto, fresh interpreters) in tests/integration; `python -m bench.runner_image` in
tests/unit, `python -m bench.cost` on the synthesized template in tests/infra. tests/unit checks that every
benchmark `python -m bench` knows is in one of these lists.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
WITH_RUNNERS = ("embedded", "pickup", "queue_throughput", "run_overhead")  # tests/e2e/test_bench_smoke_runs.py
WITHOUT_RUNNERS = ("api_latency", "call_counts", "cold_start", "lock_contention", "state_roundtrip")  # integration
TIMEOUT_S = 280  # under pytest's 300 s: a benchmark that hangs fails with its log


def smoke(name: str, results: Path) -> dict[str, Any]:
    """Run one benchmark at the smoke size; its results (latest.json), or a failure with its output and log."""
    done = subprocess.run(
        [sys.executable, "-m", "bench", "--smoke", "--only", name, "--results", str(results)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )
    log = results / "stderr.log"
    said = f"{done.stdout[-6000:]}\n--- {log}:\n{log.read_text()[-6000:] if log.exists() else '(none)'}"
    assert done.returncode == 0, f"python -m bench --smoke --only {name} exited {done.returncode}:\n{said}"
    found: dict[str, Any] = json.loads((results / "latest.json").read_text())
    assert found["size"] == "smoke" and not found["failed"], said
    (outcome,) = found["benchmarks"].values()
    assert outcome["rows"], f"{name} measured nothing:\n{said}"
    return found
