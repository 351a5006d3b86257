"""The HCL reader port: parses tenant-supplied HCL (an uploaded module's `.tf` files, a policy set's
`policies.hcl`) into python-hcl2's shape, within a budget per upload.

`process_hcl_reader.py` parses in a child process (`tenant_process.py`: an empty environment, CPU, memory and
wall-clock limits), never on a request thread or the events worker's own: one 510 KiB file of `variable` blocks
costs python-hcl2 about 10 s of CPU.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass(frozen=True)
class ParsedHcl:
    """Each file's document (`documents`) or why it has none (`errors`: python-hcl2's message, or past the budget);
    `stopped` says why parsing ended before every file was read (its time or memory), None when it did not."""

    documents: dict[str, dict[str, Any]] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    stopped: str | None = None


class HclReader(Protocol):
    def parse(self, files: Mapping[str, str]) -> ParsedHcl:
        """The files (name -> HCL text), in their order, as far as the budget goes."""
        ...
