"""The embedded server's TTL sweep (`local/workers.py`, what DynamoDB's TTL does on AWS) reaches the table
implementation under the held reads the composition root wraps every table in (`HeldReadsTable` is a table of its
own: it passes on no attribute of the one it wraps), and under a proof's fault wrapper around those."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from terrace.adapters.held_reads import HeldReadsTable
from terrace.adapters.memory_table import MemoryTable
from terrace.bootstrap import build_embedded, build_memory
from terrace.config import Settings
from terrace.local.workers import ttl_sweep_of


class _Wrapper:
    """As `tests/proof/fault_ports.py`'s `FaultyTable`: the port's methods, the rest passed on, `inner` named."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def _expired_and_live(table: Any) -> None:
    past = int(time.time()) - 60
    table.put({"pk": "tok", "sk": "tok", "expires_at": past})
    table.put({"pk": "tok2", "sk": "tok", "expires_at": past + 3600})


def test_the_sweep_reaches_the_embedded_table_under_the_held_reads(tmp_path: Path) -> None:
    settings = Settings(table_name="embedded", blob_bucket="embedded", data_dir=str(tmp_path))
    container = build_embedded(settings)
    try:
        assert isinstance(container.table, HeldReadsTable)
        _expired_and_live(container.table)
        sweep = ttl_sweep_of(container.table)
        assert sweep is not None and sweep() == 1
        assert container.table.get("tok", "tok") is None and container.table.get("tok2", "tok") is not None
    finally:
        container.close()


def test_the_sweep_reaches_through_every_wrapper_and_is_none_without_one() -> None:
    container = build_memory()
    table = _Wrapper(container.table)
    _expired_and_live(table)
    sweep = ttl_sweep_of(table)
    assert sweep is not None and sweep() == 1 and table.get("tok", "tok") is None
    assert ttl_sweep_of(HeldReadsTable(_Wrapper(object()))) is None  # a table that sweeps itself (DynamoDB)
    assert ttl_sweep_of(MemoryTable()) is not None
