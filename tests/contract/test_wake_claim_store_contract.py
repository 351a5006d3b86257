"""The warm window's wake claim on each table (memory, SQLite, DynamoDB on moto): of the API processes that see an
organization's reads, one wakes the dispatcher per interval; the others learn until when its claim holds."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from implementations import IMPLEMENTATIONS, open_table
from terrace.services.runs.store_slots import WakeClaimStore


@pytest.fixture(params=IMPLEMENTATIONS)
def stores(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[WakeClaimStore, WakeClaimStore]]:
    with open_table(request.param, tmp_path, lambda: str(request.getfixturevalue("moto_endpoint"))) as table:
        yield WakeClaimStore(table), WakeClaimStore(table)


def test_one_process_wakes_an_organization_per_interval_and_the_others_learn_until_when(
    stores: tuple[WakeClaimStore, WakeClaimStore],
) -> None:
    first, second = stores
    assert first.claim("acme", now=1000.0, hold_s=60) is None  # never claimed: this process wakes
    assert second.claim("acme", now=1001.5, hold_s=60) == 1060.0  # held: another process woke it
    assert second.claim("globex", now=1001.5, hold_s=60) is None  # each organization has its own claim
    assert first.claim("acme", now=1059.9, hold_s=60) == 1060.0
    assert second.claim("acme", now=1060.0, hold_s=60) is None  # ended: whoever comes first wakes again
    assert first.claim("acme", now=1061.0, hold_s=60) == 1120.0


def test_of_two_processes_that_both_read_an_ended_claim_only_one_wins(
    stores: tuple[WakeClaimStore, WakeClaimStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = stores
    assert first.claim("acme", now=1000.0, hold_s=60) is None
    table = second._table  # noqa: SLF001 - the race: the other process writes between this one's read and write
    read = table.get

    def get_then_lose(pk: str, sk: str) -> object:
        found = read(pk, sk)
        monkeypatch.setattr(table, "get", read)
        assert first.claim("acme", now=1070.0, hold_s=60) is None  # the other process's write lands first
        return found

    monkeypatch.setattr(table, "get", get_then_lose)
    assert second.claim("acme", now=1070.5, hold_s=60) == 1130.0  # its conditional write lost: no second wake
