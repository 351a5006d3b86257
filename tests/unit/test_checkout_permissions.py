"""`make test` stops at once, with one clear line, when the runner's job uids cannot reach the checkout's
`.venv/bin/terraform` (a clone inside a 0700 folder): tests/conftest.py checks at session start."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from job_uids import job_uids_in_use, traversable, untraversable

TESTS = Path(__file__).resolve().parent.parent


def _checkout(tmp_path: Path) -> tuple[Path, Path]:
    """A checkout (with its shared conftest and a passing test) inside a folder only its owner can enter."""
    traversable(tmp_path)  # pytest's own folders are 0700
    locked = tmp_path / "private"
    checkout = locked / "clone"
    (checkout / "tests").mkdir(parents=True)
    for shared in ("conftest.py", "job_uids.py", "longest_first.py"):
        shutil.copy(TESTS / shared, checkout / "tests" / shared)
    (checkout / "tests" / "test_ok.py").write_text("def test_ok() -> None:\n    assert True\n")
    for folder in (tmp_path, checkout, checkout / "tests"):
        folder.chmod(0o755)
    locked.chmod(0o700)
    return locked, checkout


def test_untraversable_names_the_folder_that_blocks_other_users(tmp_path: Path) -> None:
    locked, checkout = _checkout(tmp_path)
    assert untraversable(checkout) and untraversable(checkout)[-1] == locked
    locked.chmod(0o711)  # pass through without listing is enough
    assert locked not in untraversable(checkout)


def test_the_session_stops_at_once_with_one_line(tmp_path: Path) -> None:
    if not job_uids_in_use():
        pytest.skip("the runner uses job uids only as root with setpriv; this session is not")
    locked, checkout = _checkout(tmp_path)
    for folder in tmp_path.parents:  # only `locked` may block: the rest of the chain is the machine's business
        if folder in untraversable(checkout):
            pytest.skip(f"{folder} already blocks other users on this machine")
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(checkout / "tests")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert run.returncode == 4, run.stdout + run.stderr
    lines = [line for line in (run.stdout + run.stderr).splitlines() if str(locked) in line]
    assert len(lines) == 1 and f"chmod o+x {locked}" in lines[0], run.stdout + run.stderr
    assert "passed" not in run.stdout  # nothing ran
    locked.chmod(0o711)
    fixed = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(checkout / "tests")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert fixed.returncode == 0 and "1 passed" in fixed.stdout, fixed.stdout + fixed.stderr
