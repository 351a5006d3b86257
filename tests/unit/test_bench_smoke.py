"""`make test` smoke-runs every benchmark (`tests/bench_smoke.py`): none is left out, and the runner image's
measurement (`python -m bench.runner_image`, no Docker here) runs too."""

from __future__ import annotations

import sys

import pytest
from bench_smoke import REPO, WITH_RUNNERS, WITHOUT_RUNNERS

if str(REPO) not in sys.path:  # bench/ is a top-level package of the repository, not of the installed project
    sys.path.insert(0, str(REPO))

from bench import runner_image  # noqa: E402
from bench.__main__ import BENCHMARKS  # noqa: E402
from bench.common import Size  # noqa: E402


def test_every_benchmark_is_smoke_run_once() -> None:
    assert sorted(WITH_RUNNERS + WITHOUT_RUNNERS) == sorted(BENCHMARKS)


def test_the_sizes_pick_their_own_values() -> None:
    assert [size.pick(full=3, quick=2, smoke=1) for size in Size] == [3, 2, 1]


def test_the_runner_image_is_measured(capsys: pytest.CaptureFixture[str]) -> None:
    assert runner_image.main([]) == 0
    said = capsys.readouterr().out
    assert "the runner's Python layer" in said and "total:" in said
