"""The proof under faults and load (issue 30): seeded, reproducible fault and load scenarios.

Every scenario runs in two sizes:
- quick (the default; `make proof-quick`, and `make test` for the scenarios not marked `long`): a few iterations;
- full (`TERRACE_PROOF=full`, `make proof`): the iterations and durations `docs/reliability.md` reports.

Each test draws its random choices (which point to kill at, which request to drop) from `proof_rng`, seeded by
`TERRACE_PROOF_SEED` when set, else by a fresh seed. The seed of a failed test is printed with the command that
replays it: `TERRACE_PROOF_SEED=<seed> pytest <node id>`.
"""

from __future__ import annotations

import os
import random
import secrets
from collections.abc import Generator, Iterator

import pytest

FULL = os.environ.get("TERRACE_PROOF", "quick") == "full"


def sized(quick: int, full: int) -> int:
    """An iteration count, a client count or a duration in seconds: `quick` in make test, `full` in make proof."""
    return full if FULL else quick


@pytest.fixture
def proof_seed(request: pytest.FixtureRequest) -> int:
    seed = int(os.environ.get("TERRACE_PROOF_SEED") or secrets.randbelow(2**32))
    request.node.user_properties.append(("proof_seed", seed))
    return seed


@pytest.fixture
def proof_rng(proof_seed: int) -> Iterator[random.Random]:
    yield random.Random(proof_seed)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    seeds = [value for name, value in item.user_properties if name == "proof_seed"]
    if seeds and report.failed:
        report.sections.append(("proof seed", f"replay: TERRACE_PROOF_SEED={seeds[0]} pytest '{item.nodeid}'"))
    return report
