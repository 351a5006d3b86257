"""The `Error:` blocks of a run's log, for the summary an errored run's page shows above the full log.

terraform prints each diagnostic as a block: boxed (`╷`, lines starting `│ `, `╵`) since 0.15, or (older releases)
an `Error: ...` line, a blank line, the source it points at, a blank line and the detail, which ends at the next
blank line or message. Anything else the log holds
(the runner's banner, init's output, warnings) stays out of the summary.
"""

from __future__ import annotations

import re

_ESCAPE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b.?")
MAX_BLOCKS = 10
MAX_LINES = 60  # of one block
UNBOXED_PARTS = 3  # title, source, detail: the third blank line ends an unboxed block


def error_blocks(log: str) -> list[str]:
    """Each `Error:` diagnostic of `log` (terminal codes removed, box drawing stripped), in order, at most
    MAX_BLOCKS of at most MAX_LINES lines each."""
    blocks: list[str] = []
    lines = _ESCAPE.sub("", log).replace("\r\n", "\n").split("\n")
    i = 0
    while i < len(lines) and len(blocks) < MAX_BLOCKS:
        boxed = lines[i].startswith("│")
        first = _unboxed(lines[i]) if boxed else lines[i]
        if not first.startswith("Error: "):
            i += 1
            continue
        block, i, blanks = [first], i + 1, 0
        while i < len(lines) and len(block) < MAX_LINES:
            line = lines[i]
            if boxed:
                if not line.startswith("│"):  # `╵` closes the box
                    break
                block.append(_unboxed(line))
            else:
                blanks += not line.strip()
                if line.startswith(("Error: ", "Warning: ")) or blanks == UNBOXED_PARTS:
                    break
                block.append(line)
            i += 1
        blocks.append("\n".join(block).rstrip())
    return blocks


def _unboxed(line: str) -> str:
    return line[1:].removeprefix(" ")
