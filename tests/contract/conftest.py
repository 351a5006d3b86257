"""One contract per port, run against every implementation: memory (unit tests), SQLite/filesystem/local
(the embedded server) and moto (the AWS adapters). A behaviour an implementation lacks is a failing case
here, not a surprise in production."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))
from aws import moto_server  # noqa: E402


@pytest.fixture(scope="session")
def moto_endpoint() -> Iterator[str]:
    with moto_server() as url:
        yield url
