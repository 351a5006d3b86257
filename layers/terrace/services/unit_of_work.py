"""The stores' unit of work: the reads and writes of one use case, opened by the use case, never by a route.

A use case that spans services (creating a run, finishing a plan) reads the same workspace, run or list of run
tasks in several of them; on AWS each read is a DynamoDB request. Inside `unit_of_work()`, a read repeated is
answered from the first, and a write holds what it wrote (the item, or its absence; a write that fails forgets
everything held, so its caller's re-read reads the table). Writes of other requests are not seen until the block
ends: what a read-decide-write step needs anyway, its conditional write refusing a stale decision. The table
every store writes through is wrapped for it by the composition root (`adapters/held_reads.py`'s
`HeldReadsTable`); a nested unit joins the one open.

Only a use case opens one (a service method that reads, decides and writes: `RunService.create_for`,
`ApplyHandoff.finish_and_continue`); never a route (`tests/unit/test_unit_of_work_rule.py`), and never around a
read that polls (a runner's long-poll for a job, a log read waiting for its output): it would not see the write
it waits for.
"""

from __future__ import annotations

from contextlib import AbstractContextManager

from terrace.adapters.held_reads import held_reads


def unit_of_work() -> AbstractContextManager[None]:
    """Open the unit of work of one use case (join the one open): a read repeated inside is answered from the
    first; a write holds what it wrote."""
    return held_reads()


__all__ = ["unit_of_work"]
