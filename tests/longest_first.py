"""`make test`'s xdist scheduling (`--longest-files-first`): each test file runs whole on one worker (moto and
module fixtures are per file), and files are handed out one at a time as workers free up, the longest first, so
the session ends on short files instead of one worker running a long one while the other sits idle.

Order: the folder groups of `LONG_FIRST` first (each worker still runs every e2e file before anything else: the
e2e `stack`, moto in-process, is done with before a later file's `mock_aws` resets moto's backends), then by
estimated duration, longest first: the seconds `durations.json` holds for the file (measured, rounded), else its
number of tests times its folder's typical seconds per test. Deterministic: no timing of this run counts.
"""

from __future__ import annotations

import json
from collections import Counter, OrderedDict
from pathlib import Path
from typing import Any

from _pytest.nodeid import NodeId
from xdist.scheduler import LoadFileScheduling
from xdist.workermanage import WorkerController

LONG_FIRST = ("tests/e2e/", "tests/proof/", "tests/browser/", "tests/unit/test_cli.py")
DURATIONS = Path(__file__).with_name("durations.json")
# each run with --longest-files-first writes its measured seconds per file here; `python tests/longest_first.py`
# folds the long ones (MEASURE_FROM_S and more) into durations.json
MEASURED = Path(__file__).resolve().parents[1] / ".build" / "test-durations.json"
MEASURE_FROM_S = 15.0
# typical seconds per test of a folder with no measured duration (the first match counts)
PER_TEST_S = (
    ("tests/e2e/", 10.0),
    ("tests/proof/", 10.0),
    ("tests/browser/", 3.0),
    ("tests/integration/", 1.0),
    ("tests/infra/", 1.0),
    ("tests/contract/", 0.3),
    ("tests/conformance/", 0.3),
    ("tests/fuzz/", 0.1),
)
DEFAULT_PER_TEST_S = 0.1


def rooted(path: str) -> str:
    """A node id's path from the checkout (node ids are relative to the rootdir, which may be `tests/`)."""
    return path if path.startswith("tests/") else f"tests/{path}"


def group(path: str) -> int:
    """The rank of the `LONG_FIRST` group a test file belongs to (after them: everything else)."""
    path = rooted(path)
    return next((rank for rank, prefix in enumerate(LONG_FIRST) if path.startswith(prefix)), len(LONG_FIRST))


def estimate(path: str, tests: int, measured: dict[str, float]) -> float:
    """The seconds a test file is expected to take."""
    path = rooted(path)
    if path in measured:
        return measured[path]
    per_test = next((seconds for prefix, seconds in PER_TEST_S if path.startswith(prefix)), DEFAULT_PER_TEST_S)
    return tests * per_test


def order(units: dict[str, dict[str, bool]], measured: dict[str, float]) -> list[str]:
    """The files (work units: file -> its node ids) in the order they are handed out."""
    position = {path: index for index, path in enumerate(units)}
    return sorted(units, key=lambda path: (group(path), -estimate(path, len(units[path]), measured), position[path]))


def load_durations() -> dict[str, float]:
    return {str(path): float(seconds) for path, seconds in json.loads(DURATIONS.read_text()).items()}


def unique_node_ids(items: list[Any]) -> None:
    """Each test its own node id. Schemathesis names its tests `test_no_server_errors[GET /api/v2/...]` but pytest
    9 builds their ids from the function's name alone, so tests/fuzz's ~276 shared one: a scheduler by file or
    scope, which hands tests out by id, then ran one of them. Such a test gets its name as its id; any id still
    shared stops the session, so no scheduler can drop tests silently."""
    seen = Counter(item.nodeid for item in items)
    for item in items:
        if seen[item.nodeid] > 1 and item.name != item.nodeid.rsplit("::", 1)[-1]:
            item._id = NodeId.parse(f"{item.nodeid.rsplit('::', 1)[0]}::{item.name}")
    shared = sorted(nodeid for nodeid, count in Counter(item.nodeid for item in items).items() if count > 1)
    assert not shared, f"tests share a node id (a scheduler by id would run one of each): {shared[:5]}"


class LongestFileFirstScheduling(LoadFileScheduling):
    """xdist's `loadfile` (one file at a time per worker, more when its last tests run) with the work queue in
    `order`: xdist builds the queue in collection order, and this sorts it before the first file is handed out."""

    _ordered = False

    def _assign_work_unit(self, node: WorkerController) -> None:
        if not self._ordered:
            measured = load_durations()
            self.workqueue = OrderedDict((path, self.workqueue[path]) for path in order(self.workqueue, measured))
            self._ordered = True
        super()._assign_work_unit(node)


class FileDurations:
    """The controller's record of the seconds each test file took (every phase of every test, summed), written to
    `MEASURED` when the session ends: the figures `durations.json` is refreshed from."""

    def __init__(self) -> None:
        self.seconds: Counter[str] = Counter()

    def pytest_runtest_logreport(self, report: Any) -> None:
        self.seconds[rooted(report.nodeid.split("::", 1)[0])] += float(report.duration)

    def pytest_sessionfinish(self) -> None:
        if self.seconds:
            MEASURED.parent.mkdir(parents=True, exist_ok=True)
            MEASURED.write_text(json.dumps(dict(self.seconds.most_common()), indent=2) + "\n")


def fold_measured() -> dict[str, int]:
    """durations.json with the files of the last measured session that took MEASURE_FROM_S or more (rounded)."""
    measured = json.loads(MEASURED.read_text())
    folded = {path: round(seconds) for path, seconds in measured.items() if seconds >= MEASURE_FROM_S}
    return dict(sorted(folded.items()))


if __name__ == "__main__":
    DURATIONS.write_text(json.dumps(fold_measured(), indent=2) + "\n")
    print(f"{DURATIONS}: {len(json.loads(DURATIONS.read_text()))} files from {MEASURED}")
