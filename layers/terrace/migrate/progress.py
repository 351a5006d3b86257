"""Progress of a long state history: a rich bar on a terminal, plain lines otherwise."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TextIO


@contextmanager
def steps(label: str, total: int, out: TextIO = sys.stdout) -> Iterator[Callable[[], None]]:
    """`with steps("ws states", 40) as advance: ... advance()` once per step."""
    if out.isatty():
        try:
            from rich.progress import Progress  # typer's dependency; absent in a slim install
        except ImportError:
            pass
        else:
            with Progress(transient=True) as bar:
                task = bar.add_task(label, total=total)
                yield lambda: bar.advance(task)
            return
    done = [0]
    every = max(1, total // 10)

    def advance() -> None:
        done[0] += 1
        if done[0] % every == 0 or done[0] == total:
            print(f"  {label}: {done[0]}/{total}", file=out, flush=True)

    yield advance
