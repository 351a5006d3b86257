"""The benchmarks that start runners and drive terraform, each once at its smallest size (`tests/bench_smoke.py`)."""

from __future__ import annotations

from pathlib import Path

import pytest
from bench_smoke import WITH_RUNNERS, smoke

pytestmark = pytest.mark.e2e


@pytest.mark.parametrize("name", WITH_RUNNERS)
def test_the_benchmark_runs_at_its_smoke_size(name: str, tmp_path: Path) -> None:
    smoke(name, tmp_path)
