"""The state round trip benchmark waits for the indexer to be done with a version: indexed, or left unindexed with
its reason. A 100 MB state is above `max_indexed_state_bytes` (48 MB) and is never indexed: the wait ran out its
120 s and failed `make bench`'s embedded benchmark."""

from __future__ import annotations

import os
import sys
from typing import Any

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if REPO not in sys.path:  # bench/ is a top-level package of the repository, not of the installed project
    sys.path.insert(0, REPO)

from bench.state_roundtrip import RoundTrip  # noqa: E402


class Versions:
    def __init__(self, answers: list[dict[str, Any]]) -> None:
        self.answers = answers
        self.asked = 0

    def data(self, method: str, path: str) -> dict[str, Any]:
        assert (method, path) == ("GET", "/api/v2/state-versions/sv-1")
        self.asked += 1
        return {"attributes": self.answers[min(self.asked, len(self.answers)) - 1]}


def _trip(answers: list[dict[str, Any]]) -> tuple[RoundTrip, Versions]:
    trip = RoundTrip.__new__(RoundTrip)  # no stack: only the API's answers matter
    trip.api = versions = Versions(answers)  # type: ignore[assignment]
    return trip, versions


def test_the_wait_ends_when_the_version_is_left_unindexed_with_its_reason() -> None:
    too_big = {"resources-processed": False, "index-error": "the state is 104841027 bytes: states above ..."}
    trip, versions = _trip([{"resources-processed": False}, too_big])
    trip._indexed("sv-1", deadline_s=30)
    assert versions.asked == 2


def test_the_wait_ends_when_the_version_is_indexed_and_fails_past_its_deadline() -> None:
    trip, versions = _trip([{"resources-processed": False}, {"resources-processed": True}])
    trip._indexed("sv-1", deadline_s=30)
    assert versions.asked == 2
    trip, _ = _trip([{"resources-processed": False}])
    with pytest.raises(RuntimeError, match="not indexed"):
        trip._indexed("sv-1", deadline_s=0.05)
