"""The cold start benchmark's headline is the median of its pairs' own ratios (`bench/cold_start.py`: `paired`), not
the ratio of two medians taken apart: a pair's baseline and handler interpreters ran under the same load."""

from __future__ import annotations

import os
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if REPO not in sys.path:  # bench/ is a top-level package of the repository, not of the installed project
    sys.path.insert(0, REPO)

from bench.cold_start import paired  # noqa: E402


def side(total_s: float, cpu_s: float, first_s: float | None = None, gc_s: float = 0.0) -> dict[str, float]:
    if first_s is None:
        return {"import_s": total_s, "cpu_s": cpu_s, "gc_s": gc_s}  # a baseline interpreter
    return {"import_s": total_s - first_s, "first_request_s": first_s, "cpu_s": cpu_s, "gc_s": gc_s}


def test_the_headline_is_the_median_of_the_pairs_ratios_and_overheads() -> None:
    # a quiet pair, a pair under load (both sides slow) and a pair whose handler side alone was slowed
    baseline = [side(0.5, 0.4, gc_s=0.05), side(1.0, 0.8, gc_s=0.1), side(0.5, 0.4, gc_s=0.04)]
    cold = [side(0.6, 0.48, 0.5), side(1.15, 0.88, 1.0), side(0.8, 0.6, 0.7)]
    found = paired(baseline, cold)
    assert found["ratio"] == pytest.approx(1.2)  # pairs: 1.2, 1.15, 1.6
    assert found["ratio_p25"] == pytest.approx(1.175) and found["ratio_p75"] == pytest.approx(1.4)
    assert found["cpu_ratio"] == pytest.approx(1.2)  # pairs: 1.2, 1.1, 1.5
    assert found["overhead_s"] == pytest.approx(0.15)  # pairs: 0.1, 0.15, 0.3
    assert found["cpu_overhead_s"] == pytest.approx(0.08)  # pairs: 0.08, 0.08, 0.2
    # with each pair's baseline garbage collection added back (the handler's side collects nothing): .13, .18, .24
    assert found["own_cpu_overhead_s"] == pytest.approx(0.18) and found["baseline_gc_s"] == pytest.approx(0.05)
    # the ratio of the two sides' own medians (0.8 / 0.5) is what a neighbour's load skews
    assert found["total_s"] / found["baseline_s"] == pytest.approx(1.6)
    assert found["first_request_s"] == pytest.approx(0.7) and found["import_s"] == pytest.approx(0.1)


def test_pairs_must_match() -> None:
    with pytest.raises(ValueError):
        paired([side(0.5, 0.4)], [])
