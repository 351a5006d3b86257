"""Incremental reads of a running phase's live log (`logs.py`): a reader polls the same log-read URL with a growing
offset, so each process remembers, per phase, the sort key of the last chunk it read and the masked stream so far;
a poll then reads only the chunks written since (one query from that key: nothing new costs one empty answer) and
masks only them (`Masker.safe_prefix` over the bytes not yet decided, so a secret split across chunks is still
masked, and what a reader saw never changes). A process that has no cursor for a phase (another Lambda instance,
one just started) reads the whole log once and goes on from there; a change of the workspace's sensitive values
starts the cursor over. Bounded: at most `MAX_PHASES` phases and `MAX_BYTES` of masked log each (a larger log is
read whole, as before)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable

from terrace.domain.masking import Masker
from terrace.services.runs.store_logs import LogStore

MAX_PHASES = 64  # phases remembered per process (the least recently read go first)
MAX_BYTES = 8 * 1024 * 1024  # masked log held per phase


class _Cursor:
    """A process's place in one phase's log: state it moves forward, never a value it stores."""

    __slots__ = ("after", "key", "lock", "masked", "pending")

    def __init__(self) -> None:
        self.after = ""  # the place of the last chunk read ("": none yet)
        self.key: tuple[bytes, ...] | None = None  # the masker's secrets; None until the first bytes were masked
        self.masked = bytearray()  # the decided, masked stream so far (without STX)
        self.pending = b""  # raw bytes at the end that may begin a secret: undecided until more arrive
        self.lock = threading.Lock()  # one reader of a phase at a time: a cursor only advances


class LogCursors:
    def __init__(self, logs: LogStore, max_phases: int = MAX_PHASES, max_bytes: int = MAX_BYTES) -> None:
        self._logs = logs
        self._max_phases, self._max_bytes = max_phases, max_bytes
        self._cursors: OrderedDict[str, _Cursor] = OrderedDict()
        self._lock = threading.Lock()

    def _cursor(self, phase_id: str) -> _Cursor:
        with self._lock:
            cursor = self._cursors.pop(phase_id, None) or _Cursor()
            self._cursors[phase_id] = cursor  # the most recently read last
            while len(self._cursors) > self._max_phases:
                self._cursors.popitem(last=False)
            return cursor

    def forget(self, phase_id: str) -> None:
        with self._lock:
            self._cursors.pop(phase_id, None)

    def stream(self, phase_id: str, known: int, masker_of: Callable[[], Masker], *, final: bool) -> bytes | None:
        """The masked log (without framing) as far as it is decided, and all of it when `final`; None when nothing
        is new past `known` bytes of it (the masker is then never asked for: no variable is read)."""
        cursor = self._cursor(phase_id)
        with cursor.lock:
            new = self._logs.chunks_after(phase_id, cursor.after)
            if not new and not final and len(cursor.masked) <= known:
                return None
            masker = masker_of()
            if cursor.key is not None and cursor.key != masker.key:  # its sensitive values changed: start over
                cursor.after, cursor.masked, cursor.pending = "", bytearray(), b""
                new = self._logs.chunks_after(phase_id, "")
            cursor.key = masker.key
            if new:
                cursor.after = new[-1][0]
                undecided = cursor.pending + b"".join(data for _, data in new)
                out, used = masker.safe_prefix(undecided)
                cursor.masked += out
                cursor.pending = undecided[used:]
            stream = bytes(cursor.masked) + (masker.mask(cursor.pending) if final else b"")
        if final or len(stream) > self._max_bytes:
            self.forget(phase_id)  # done (nothing more is written), or too large to hold
        return stream
