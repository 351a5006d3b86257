"""The outbox proof's fault hook: around the embedded server's table, SIGKILL the server right after a run
transition's transaction committed and before its event was published (`TERRACE_PROOF_KILL_AFTER_COMMIT`).

`kill_server_program.py` wraps the table with `KillAfterCommit` when its environment holds
`TERRACE_PROOF_KILL_AFTER_COMMIT=<status>:<n>`: the n-th committed transaction since the start that staged a
`run.status_changed` event to `<status>` (`adapters/table_outbox.py` items) kills the process at once, so the relay
never runs. It prints `KILL_MARKER` first (the proof checks the kill came from here, not elsewhere).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
from collections.abc import Sequence
from typing import Any

from terrace.adapters.table import Put
from terrace.adapters.table_outbox import PARTITION

ENV = "TERRACE_PROOF_KILL_AFTER_COMMIT"
KILL_MARKER = "proof: killed after the commit of run transition"


def _staged_statuses(ops: Sequence[Any]) -> list[str]:
    found = []
    for op in ops:
        if isinstance(op, Put) and op.item.get("pk") == PARTITION:
            event = json.loads(op.item["event"])
            if event.get("type") == "run.status_changed":  # every status the write passed (`to` is the last)
                found.extend(str(status) for status in event.get("statuses") or [event.get("to")])
    return found


class KillAfterCommit:
    """The table port, killing its process after the n-th commit staging a transition to `status`."""

    def __init__(self, inner: Any, status: str, nth: int) -> None:
        self.inner, self.status, self.nth = inner, status, nth
        self.seen = 0
        self._lock = threading.Lock()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def transact(self, ops: Sequence[Any]) -> None:
        self.inner.transact(ops)
        if self.status not in _staged_statuses(ops):
            return
        with self._lock:
            self.seen += 1
            if self.seen == self.nth:
                print(f"{KILL_MARKER} #{self.nth} to {self.status}", flush=True)
                sys.stderr.flush()
                os.kill(os.getpid(), signal.SIGKILL)


def wrap_ports_from_env() -> Any:
    """`LocalStack(wrap_ports=...)` for `TERRACE_PROOF_KILL_AFTER_COMMIT`, or None when it is not set."""
    spec = os.environ.get(ENV)
    if not spec:
        return None
    status, nth = spec.rsplit(":", 1)
    return lambda table, blobs: (KillAfterCommit(table, status, int(nth)), blobs)
