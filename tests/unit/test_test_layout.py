"""The suite's own layout: pytest imports test files by their base name (rootdir-relative, no packages), so two
test files of one name in two folders make the later one an "import file mismatch" error, found only when both are
collected in one run (as `make test` does)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def test_no_two_test_files_share_a_name() -> None:
    names = Counter(path.name for path in TESTS.rglob("test_*.py"))
    assert [name for name, count in names.items() if count > 1] == []
