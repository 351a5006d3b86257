"""Fixtures for unit tests (in-memory adapters). Builders live in the helper modules next to this file."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from terrace.adapters.table import Table

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parents[1] / "contract"))
sys.path.insert(0, str(Path(__file__).parents[1] / "integration"))

from aws import moto_server  # noqa: E402
from event_loops import loops_of_the_test  # noqa: E402
from implementations import IMPLEMENTATIONS, open_table  # noqa: E402
from state_helpers import Env, make_env  # noqa: E402


@pytest.fixture(autouse=True)
def _one_event_loop_per_client() -> Iterator[None]:
    """The clients a test's helpers make (`make_run_env`, `make_env`) are served by one event loop each, stopped
    when the test ends (before the leak guard of tests/conftest.py looks): a loop per request cost a third of the
    request's CPU (`event_loops.py`)."""
    with loops_of_the_test():
        yield


@pytest.fixture
def state_env() -> Env:
    """A user who owns organization `acme` with a local-execution workspace `prod`, and a TestClient."""
    return make_env()


@pytest.fixture(scope="module")
def moto_endpoint() -> Iterator[str]:
    """One moto server per module, started only when a test asks for the moto table."""
    with moto_server() as url:
        yield url


@pytest.fixture(params=IMPLEMENTATIONS)
def table(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Table]:
    """The same test over each table: memory, SQLite and DynamoDB on moto. A module's own `table` overrides it."""
    with open_table(request.param, tmp_path, lambda: str(request.getfixturevalue("moto_endpoint"))) as made:
        yield made
