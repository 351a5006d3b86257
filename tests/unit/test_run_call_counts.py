"""Table and blob-store calls per run stay bounded (`python -m bench --only call_counts` prints them on moto).

The same steps as the bench, on the memory adapters: creating a run (`POST /api/v2/runs`, its token look-up and
response included) and finishing its plan (the runner's `POST /api/runner/jobs/:id/finish`). Upper bounds: a
change that adds a read or a write to either path fails here and must say why in the bound."""

from __future__ import annotations

from terrace.bootstrap import build_memory
from terrace.config import Settings
from terrace.services.events import landed_event

from bench.call_counts import BEFORE, TARGET, measure, requests_of

# the audit event 2 (its write, and the new run's organization: `POST /runs` names none), token 1,
CREATE_MAX = 16  # workspace + version 2, variables 2, archive head + version seal 2, the organization's
# stage usage 1 (no run task, no policy set: no participant asked), older pending runs 1, the run with its workspace
# and its first status change 1, the job 1, the answer 2 (queue positions, run events), the site admin's cost
# estimation switch 1 (admin/cost-estimation-settings; cached 2 s in a process: a cold process's first run only);
# tool versions only for the tools the runners hold (none here)
# the audit event 1 (the runner token names its organization), token 1,
FINISH_MAX = 11  # run 1, plan file and JSON 2, variables 1, log 2 (chunks, archive: not asked whether it
# exists while the chunks are there), the organization's stage usage 1, the run with its token's revocation 1, the
# chunks' purge 1; the cost estimate reuses the JSON's recorded size (the same on the AWS adapters,
# `python -m bench --only call_counts`)


def test_creating_a_run_and_finishing_its_plan_stay_within_their_call_counts():
    container = build_memory(Settings(table_name="memory", blob_bucket="memory", url_signing_secret="sign"))

    def upload(url: str, data: bytes) -> None:
        key = url.split("memory://blobs/")[1].split("?")[0]
        container.blobs.put(key, data)
        container.events.handle(landed_event(key))

    steps = measure(container, upload)
    create, finish = requests_of(steps["create"]), requests_of(steps["finish"])
    assert create["table"] + create["blobs"] <= CREATE_MAX, dict(steps["create"])
    assert finish["table"] + finish["blobs"] <= FINISH_MAX, dict(steps["finish"])
    assert CREATE_MAX < BEFORE["create"] and FINISH_MAX < BEFORE["finish"]
    assert (CREATE_MAX, FINISH_MAX) == (TARGET["create"], TARGET["finish"])
    # the transitions' events ride in their transactions (the outbox); the relay removes them after each commit in
    # one batch, counted apart: creating a run passes one write with a status change, finishing a plan one
    assert create["outbox"] <= 1 and finish["outbox"] <= 1, (dict(steps["create"]), dict(steps["finish"]))


def test_held_reads_answer_a_repeated_read_once_and_see_the_scopes_own_writes():
    from collections import Counter

    from terrace.adapters.held_reads import HeldReadsTable, held_reads
    from terrace.adapters.memory_table import MemoryTable
    from terrace.adapters.table import ConditionFailed, Put

    from bench.call_counts import Counting

    counts: Counter[str] = Counter()
    inner = MemoryTable()
    table = HeldReadsTable(Counting(inner, "table", counts))  # type: ignore[arg-type]
    inner.put({"pk": "a", "sk": "x", "version": 1})
    with held_reads():
        assert table.get("a", "x") == table.get("a", "x") == {"pk": "a", "sk": "x", "version": 1}
        assert table.query("a") == table.query("a")
        assert counts == Counter({"table.get": 1, "table.query": 1})
        table.put({"pk": "a", "sk": "x", "version": 2}, if_version=1)
        assert table.get("a", "x") == {"pk": "a", "sk": "x", "version": 2}  # what it wrote, not read again
        assert [i["version"] for i in table.query("a")] == [2]  # its partition's queries forgotten
        inner.put({"pk": "a", "sk": "x", "version": 3})  # another writer
        try:
            table.transact([Put({"pk": "a", "sk": "x", "version": 3}, if_version=2)])
        except ConditionFailed:
            pass
        assert table.get("a", "x") == {"pk": "a", "sk": "x", "version": 3}  # a lost write forgets everything
    before = counts["table.get"]
    table.get("a", "x")
    table.get("a", "x")
    assert counts["table.get"] == before + 2, "outside a scope every read is a request"
    wrapped = HeldReadsTable(inner)  # the composition root wraps any table: a table of its own, not a disguise
    assert wrapped.inner is inner and not isinstance(wrapped, MemoryTable)


def test_held_index_queries_are_forgotten_when_a_write_enters_or_leaves_them_only():
    from terrace.adapters.held_reads import HeldReadsTable, held_reads
    from terrace.adapters.memory_table import MemoryTable
    from terrace.adapters.table import Delete, Put

    inner = MemoryTable()
    table = HeldReadsTable(inner)
    inner.put({"pk": "a", "sk": "1", "gsi1pk": "list", "gsi1sk": "1"})
    with held_reads():
        assert [i["sk"] for i in table.query("list", index="gsi1")] == ["1"]
        table.put({"pk": "other", "sk": "x"})  # neither enters nor leaves the index partition: still held
        inner.put({"pk": "b", "sk": "0", "gsi1pk": "list", "gsi1sk": "0"})  # another writer: not seen in the scope
        assert [i["sk"] for i in table.query("list", index="gsi1")] == ["1"]
        table.transact([Put({"pk": "c", "sk": "2", "gsi1pk": "list", "gsi1sk": "2"})])  # enters it: read again
        assert [i["sk"] for i in table.query("list", index="gsi1")] == ["0", "1", "2"]
        table.transact([Delete("a", "1")])  # an item it lists leaves: read again
        assert [i["sk"] for i in table.query("list", index="gsi1")] == ["0", "2"]
