"""The stores' unit of work (`services/unit_of_work.py`) is opened by a use case, never by a route: no module
under `web/` imports it or the held reads it is made of (`adapters/held_reads.py`), whose scope only the unit of
work opens and whose table only the composition root builds. `POST /runs` holds its reads in one use case
(`RunService.create_for`), within the requests `test_run_call_counts.py` pins."""

from __future__ import annotations

from pathlib import Path

from test_layer_rule import PACKAGE, imports_of

HELD_READS = "terrace.adapters.held_reads"
UNIT_OF_WORK = "terrace.services.unit_of_work"
# who may import the held reads' module: the unit of work (its scope), the composition root (its table)
HELD_READS_IMPORTERS = {"services/unit_of_work.py", "bootstrap.py"}


def _under(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def importers_of(prefix: str, folder: Path = PACKAGE) -> list[str]:
    return sorted(
        {
            f"{path.relative_to(PACKAGE)}:{line}"
            for path in folder.rglob("*.py")
            for line, module in imports_of(path)
            if _under(module, prefix)
        }
    )


def test_no_route_opens_the_unit_of_work() -> None:
    assert importers_of(UNIT_OF_WORK, PACKAGE / "web") == []
    assert importers_of(HELD_READS, PACKAGE / "web") == []


def test_only_the_unit_of_work_and_the_composition_root_import_the_held_reads() -> None:
    found = {entry.split(":")[0] for entry in importers_of(HELD_READS)}
    assert found == HELD_READS_IMPORTERS  # both seen: the checker reads these imports


def test_the_unit_of_work_is_opened_by_services_only() -> None:
    found = {entry.split(":")[0] for entry in importers_of(UNIT_OF_WORK)}
    assert found and all(path.startswith("services/") for path in found), found


def test_a_held_read_is_not_seen_outside_the_use_case_that_held_it() -> None:
    """After the use case returns, its reads are no longer held: a later call of the same request reads anew."""
    from terrace.adapters.held_reads import HeldReadsTable
    from terrace.bootstrap import build_memory
    from terrace.services.unit_of_work import unit_of_work

    container = build_memory()
    table = container.table
    assert isinstance(table, HeldReadsTable)
    with unit_of_work():
        assert table.get("k", "x") is None
        table.inner.put({"pk": "k", "sk": "x"})  # another request's write, behind the held reads
        assert table.get("k", "x") is None  # held
        with unit_of_work():  # a nested unit joins the one open
            assert table.get("k", "x") is None
    assert table.get("k", "x") == {"pk": "k", "sk": "x"}
