"""The retention sweep's claim on each table (memory, SQLite, DynamoDB on moto): one process of many takes a due
sweep, none takes it again before its interval."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from implementations import IMPLEMENTATIONS, open_table
from terrace.services.workflows.store import SweepClaimStore


@pytest.fixture(params=IMPLEMENTATIONS)
def stores(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[SweepClaimStore, SweepClaimStore]]:
    with open_table(request.param, tmp_path, lambda: str(request.getfixturevalue("moto_endpoint"))) as table:
        yield SweepClaimStore(table), SweepClaimStore(table)


def test_one_process_takes_a_due_sweep_and_none_before_its_interval(
    stores: tuple[SweepClaimStore, SweepClaimStore],
) -> None:
    first, second = stores
    assert first.claim(now=1000.0, interval_s=3600)  # never swept: due
    assert not second.claim(now=1001.0, interval_s=3600)  # taken an instant ago
    assert not first.claim(now=4599.0, interval_s=3600)
    assert second.claim(now=4600.0, interval_s=3600)  # an interval later: due again, for whoever comes first
    assert not first.claim(now=4600.5, interval_s=3600)
