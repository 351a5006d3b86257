"""The moto server the integration tests of a module share (one per module, stopped after it)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from aws import moto_server


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    with moto_server() as url:
        yield url
