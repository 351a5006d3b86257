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
