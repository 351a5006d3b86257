"""The benchmarks on moto and fresh interpreters, each once at its smallest size (`tests/bench_smoke.py`)."""

from __future__ import annotations

from pathlib import Path

import pytest
from bench_smoke import WITHOUT_RUNNERS, smoke


@pytest.mark.parametrize("name", WITHOUT_RUNNERS)
def test_the_benchmark_runs_at_its_smoke_size(name: str, tmp_path: Path) -> None:
    smoke(name, tmp_path)
