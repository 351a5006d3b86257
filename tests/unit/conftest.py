"""Fixtures for unit tests (in-memory adapters). Builders live in the helper modules next to this file."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from state_helpers import Env, make_env  # noqa: E402


@pytest.fixture
def state_env() -> Env:
    """A user who owns organization `acme` with a local-execution workspace `prod`, and a TestClient."""
    return make_env()
