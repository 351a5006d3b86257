"""`make test`'s scheduling (tests/longest_first.py): whole files, the long folders' first, then the longest first;
and every test its own node id, which a scheduler by file hands out."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

import longest_first
import pytest
from _pytest.nodeid import NodeId
from longest_first import DURATIONS, FileDurations, estimate, fold_measured, load_durations, order, unique_node_ids


def units(**files: int) -> dict[str, dict[str, bool]]:
    """Work units as xdist builds them (file -> its node ids), in collection order; `a__b_py` is `a/b.py`."""
    made = {}
    for name, tests in files.items():
        path = name.replace("__", "/").replace("_py", ".py")
        made[path] = {f"{path}::test_{index}": False for index in range(tests)}
    return made


def test_the_long_folders_come_first_whatever_their_estimate() -> None:
    queue = units(tests__unit__test_big_py=5000, tests__e2e__test_short_py=1, tests__proof__test_p_py=1)
    assert order(queue, {}) == ["tests/e2e/test_short.py", "tests/proof/test_p.py", "tests/unit/test_big.py"]


def test_within_a_group_the_longest_file_comes_first() -> None:
    queue = units(tests__unit__test_a_py=3, tests__unit__test_b_py=300, tests__unit__test_c_py=30)
    assert order(queue, {}) == ["tests/unit/test_b.py", "tests/unit/test_c.py", "tests/unit/test_a.py"]


def test_a_measured_duration_outweighs_the_estimate_from_the_count() -> None:
    queue = units(tests__unit__test_a_py=3, tests__unit__test_b_py=300)
    assert order(queue, {"tests/unit/test_a.py": 500.0}) == ["tests/unit/test_a.py", "tests/unit/test_b.py"]


def test_equal_estimates_keep_the_collection_order() -> None:
    queue = units(tests__unit__test_z_py=2, tests__unit__test_a_py=2)
    assert order(queue, {}) == ["tests/unit/test_z.py", "tests/unit/test_a.py"]


def test_node_ids_relative_to_the_tests_folder_are_placed_alike() -> None:
    assert estimate("e2e/test_x.py", 2, {}) == estimate("tests/e2e/test_x.py", 2, {}) == 20.0
    assert estimate("unit/test_x.py", 2, {"tests/unit/test_x.py": 7.0}) == 7.0


def test_the_committed_durations_name_existing_files() -> None:
    measured = load_durations()
    assert measured and all(seconds > 0 for seconds in measured.values())
    missing = [path for path in measured if not (DURATIONS.parent.parent / path).is_file()]
    assert not missing, f"tests/durations.json names files that are gone: {missing}"


@dataclass
class FakeItem:
    name: str
    _id: NodeId = field(init=False)
    base: str = "tests/fuzz/test_api_schema.py::test_no_server_errors"

    def __post_init__(self) -> None:
        self._id = NodeId.parse(self.base)

    @property
    def nodeid(self) -> str:
        return str(self._id)


def test_tests_sharing_a_node_id_get_their_names_as_ids() -> None:
    items = [FakeItem("test_no_server_errors[GET /a]"), FakeItem("test_no_server_errors[POST /a]")]
    unique_node_ids(items)
    assert [item.nodeid for item in items] == [
        "tests/fuzz/test_api_schema.py::test_no_server_errors[GET /a]",
        "tests/fuzz/test_api_schema.py::test_no_server_errors[POST /a]",
    ]


def test_a_node_id_still_shared_stops_the_session() -> None:
    items = [FakeItem("test_no_server_errors"), FakeItem("test_no_server_errors")]
    with pytest.raises(AssertionError, match="share a node id"):
        unique_node_ids(items)


def test_a_session_records_each_files_seconds_and_the_long_ones_fold_into_the_durations(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(longest_first, "MEASURED", tmp_path / "measured.json")
    recorder = FileDurations()
    for nodeid, seconds in [
        ("e2e/test_slow.py::test_a", 12.0),  # relative to tests/, as xdist reports it from a rootdir of tests/
        ("tests/e2e/test_slow.py::test_b", 9.5),
        ("tests/unit/test_quick.py::test_c", 0.2),
    ]:
        recorder.pytest_runtest_logreport(SimpleNamespace(nodeid=nodeid, duration=seconds))
    recorder.pytest_sessionfinish()
    assert json.loads((tmp_path / "measured.json").read_text()) == {
        "tests/e2e/test_slow.py": 21.5,
        "tests/unit/test_quick.py": 0.2,
    }
    assert fold_measured() == {"tests/e2e/test_slow.py": 22}
