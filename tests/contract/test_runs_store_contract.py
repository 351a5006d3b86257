"""The run store (`services/runs/store.py` and its `store_<part>.py` modules) on each table (memory, SQLite,
DynamoDB on moto): runs listed per workspace newest first apart from assessments, the open-runs index kept by each
write, a run written only from the version read; logs in order; comments per run; configuration versions replaced
only from the version read; task stages in stage order; run task names unique in an organization, a task attached
once per workspace; task results and their tokens; an assessment recorded once; the runners' capacity item written
from its version; and `delete_all_of` a workspace or an organization leaves nothing of either behind."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from implementations import IMPLEMENTATIONS, open_table
from terrace.adapters.memory_blobs import MemoryBlobs
from terrace.adapters.memory_events import MemoryEventPublisher
from terrace.adapters.table import ConditionFailed, Table
from terrace.adapters.table_job_queue import TableJobQueue
from terrace.adapters.table_outbox import TableOutbox
from terrace.domain import runs as rs
from terrace.domain.assessments import AssessmentResult
from terrace.domain.comments import Comment
from terrace.domain.configuration_versions import ConfigurationVersion
from terrace.domain.run_tasks import RunTask, TaskResult, WorkspaceTask
from terrace.domain.runs import PhaseState, Run
from terrace.domain.task_stages import POST_PLAN, PRE_PLAN, TaskStage, stage_id
from terrace.services.outbox_relay import OutboxRelay
from terrace.services.runs.store import RunStore, event_item
from terrace.services.runs.store_logs import HEAD, TAIL

WS, ORG = "ws-abc", "acme"


@pytest.fixture(params=IMPLEMENTATIONS)
def table(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Table]:
    with open_table(request.param, tmp_path, lambda: str(request.getfixturevalue("moto_endpoint"))) as table:
        yield table


@pytest.fixture
def store(table: Table) -> RunStore:
    return RunStore(table, OutboxRelay(TableOutbox(table), MemoryEventPublisher()))


def _run(tail: str, created_at: str, *, assessment: bool = False, workspace: str = WS) -> Run:
    run = Run(f"run-{tail}", ORG, workspace, f"cv-{tail}", created_at, "alice", assessment=assessment)
    run.plan, run.apply = PhaseState(id=f"plan-{tail}"), PhaseState(id=f"apply-{tail}")
    run.transition(rs.PLAN_QUEUED, created_at)
    return run


def _stage(run: Run, name: str) -> TaskStage:
    at = run.created_at
    return TaskStage(stage_id(run.id, name), run.id, ORG, run.workspace_id, name, at, at)


def _result(run: Run, stage: str, n: int) -> TaskResult:
    at = f"2026-01-01T00:00:0{n}Z"
    return TaskResult(f"taskrs-{n}", run.id, ORG, WS, stage, POST_PLAN, "task-1", "t", "https://t.example", "wstask-1",
                      "mandatory", at, at)  # fmt: skip


def test_runs_are_listed_newest_first_and_written_from_the_version_read(store: RunStore) -> None:
    store.save([(_run("1", "2026-01-01T00:00:00Z"), None)], None, {})
    store.save([(_run("2", "2026-01-02T00:00:00Z"), None)], None, {})
    store.save([(_run("3", "2026-01-03T00:00:00Z", assessment=True), None)], None, {})
    assert [r.id for r in store.list_for_workspace(WS)] == ["run-2", "run-1"]
    assert [r.id for r in store.oldest_first(WS)] == ["run-1", "run-2"]
    assert (latest := store.latest_assessment(WS)) is not None and latest.id == "run-3"
    assert [e["run_id"] for e in store.open_runs()] == ["run-1", "run-2", "run-3"]
    assert [e["action"] for e in store.events("run-1")] == [rs.PLAN_QUEUED]
    with pytest.raises(ConditionFailed):
        store.save([(_run("1", "2026-01-01T00:00:00Z"), None)], None, {})  # the id is taken
    first, second = store.load("run-1"), store.load("run-1")
    first.transition(rs.CANCELED, "2026-01-04T00:00:00Z")
    store.save([(first, 1)], None, {"run-1": rs.PLAN_QUEUED})
    with pytest.raises(ConditionFailed):
        store.save([(second, 1)], None, {})
    assert store.load("run-1").status == rs.CANCELED and store.load("run-1").version == 2
    assert [e["run_id"] for e in store.open_runs()] == ["run-2", "run-3"]  # a final run leaves the index
    assert store.load_many(["run-1", "run-9"])[0].id == "run-1" and not store.exists("run-9")


def test_logs_are_read_in_order_and_comments_per_run(store: RunStore) -> None:
    store.logs.put("plan-1", 1, 5, b"world")
    store.logs.put("plan-1", 1, 0, b"hello")
    store.logs.put("plan-1", 1, TAIL, b"!")
    store.logs.put("plan-1", 1, HEAD, b">")
    store.logs.put("plan-1", 2, HEAD, b"again")
    assert b"".join(store.logs.chunks("plan-1")) == b">helloworld!again"
    store.logs.purge("plan-1")
    assert store.logs.chunks("plan-1") == []
    event = event_item("run-1", "2026-01-01T00:00:00Z", "commented", "commented", comment_id="cm-1")
    comment = Comment("cm-1", "run-1", "looks good", "alice", "2026-01-01T00:00:00Z", event["id"])
    store.save([(_run("1", "2026-01-01T00:00:00Z"), None)], None, {}, store.comments.put_ops(comment, event))
    assert store.comments.of_run("run-1") == [comment] and store.comments.find("cm-1") == comment
    assert store.comments.find("cm-2") is None and store.comments.find("nope") is None
    assert store.event(event["id"])["comment_id"] == "cm-1"


def test_configuration_versions_are_replaced_only_from_the_version_read(store: RunStore) -> None:
    cvs = store.configurations
    cvs.create(ConfigurationVersion("cv-2", WS, ORG, "2026-01-02T00:00:00Z"))
    cvs.create(ConfigurationVersion("cv-1", WS, ORG, "2026-01-01T00:00:00Z"))
    with pytest.raises(ConditionFailed):
        cvs.create(ConfigurationVersion("cv-1", WS, ORG, "2026-01-01T00:00:00Z"))
    assert [cv.id for cv in cvs.of_workspace(WS)] == ["cv-1", "cv-2"]
    assert [cv.id for cv in cvs.of_workspace(WS, newest_first=True)] == ["cv-2", "cv-1"]
    first = cvs.find("cv-1")
    assert first is not None and cvs.find("not-a-cv") is None and cvs.read("cv-9") is None
    cvs.replace(ConfigurationVersion("cv-1", WS, ORG, first.created_at, status="uploaded", version=2), 1)
    with pytest.raises(ConditionFailed):
        cvs.replace(ConfigurationVersion("cv-1", WS, ORG, first.created_at, status="errored", version=2), 1)
    assert (cv := cvs.read("cv-1")) is not None and cv.status == "uploaded" and cv.version == 2


def test_task_stages_in_stage_order_and_written_from_the_version_read(store: RunStore) -> None:
    run = _run("1", "2026-01-01T00:00:00Z")
    post, pre = _stage(run, POST_PLAN), _stage(run, PRE_PLAN)
    store.stages.save(post, new=True)
    store.stages.save(pre, new=True)
    with pytest.raises(ConditionFailed):
        store.stages.save(_stage(run, PRE_PLAN), new=True)
    assert [s.stage for s in store.stages.of_run(run.id)] == [PRE_PLAN, POST_PLAN]
    assert {s.id for s in store.stages.many([pre.id, post.id])} == {pre.id, post.id}
    stale = store.stages.find(pre.id)
    assert stale is not None and store.stages.find("ts-nothing") is None
    pre.add("task-results", ["taskrs-1"])
    store.stages.save(pre)
    with pytest.raises(ConditionFailed):
        store.stages.save(stale)
    assert stale.version == 1 and (found := store.stages.find(pre.id)) is not None
    assert found.results == {"task-results": ["taskrs-1"]} and found.version == 2


def test_run_task_names_are_unique_and_a_task_attaches_once_per_workspace(store: RunStore) -> None:
    tasks = store.tasks
    tasks.create(RunTask("task-1", ORG, "Lint", "https://lint.example", "2026-01-01T00:00:00Z"))
    with pytest.raises(ConditionFailed):
        tasks.create(RunTask("task-2", ORG, "lint", "https://other.example", "2026-01-01T00:00:00Z"))
    tasks.create(RunTask("task-2", ORG, "Audit", "https://audit.example", "2026-01-01T00:00:00Z"))
    assert [t.name for t in tasks.of_organization(ORG)] == ["Audit", "Lint"]
    assert set(store.stages.usage_markers(ORG)) == {"task-results"}
    renamed = RunTask("task-2", ORG, "Lint", "https://audit.example", "2026-01-01T00:00:00Z", version=2)
    with pytest.raises(ConditionFailed):
        tasks.replace(renamed, 1, "Audit")
    assert tasks.name_taken(ORG, "LINT") and not tasks.name_taken(ORG, "Audit2")
    wt = WorkspaceTask("wstask-1", ORG, WS, "task-1", "mandatory", ["post_plan"], "2026-01-01T00:00:00Z")
    tasks.attach(wt)
    with pytest.raises(ConditionFailed):
        tasks.attach(WorkspaceTask("wstask-2", ORG, WS, "task-1", "advisory", ["post_plan"], "2026-01-01T00:00:01Z"))
    assert tasks.attached_to(WS) == [wt] and tasks.attachments_of_task("task-1") == [wt]
    assert tasks.attachment("wstask-1") == wt and tasks.attachment("wstask-2") is None
    task = tasks.find("task-1")
    assert task is not None
    tasks.delete(task)
    assert tasks.find("task-1") is None and tasks.attached_to(WS) == [] and not tasks.name_taken(ORG, "lint")


def test_task_results_are_written_from_the_version_read_with_their_token(store: RunStore) -> None:
    run = _run("1", "2026-01-01T00:00:00Z")
    sid = stage_id(run.id, POST_PLAN)
    first, second = _result(run, sid, 2), _result(run, sid, 1)
    store.results.save(first, new=True)
    store.results.save(second, new=True, event={"type": "run_task.deliver", "result_id": second.id, "attempt": 1})
    assert [r.id for r in store.results.of_stage(sid)] == ["taskrs-1", "taskrs-2"]
    assert set(store.results.many(["taskrs-1", "taskrs-2", "nope"])) == {"taskrs-1", "taskrs-2"}
    stale = store.results.find("taskrs-1")
    assert stale is not None
    store.results.save(second)
    with pytest.raises(ConditionFailed):
        store.results.save(stale)
    assert stale.version == 1 and store.results.token("taskrs-1") is None
    store.results.put_token("taskrs-1", "sealed")
    assert store.results.token("taskrs-1") == "sealed"


def test_an_assessment_is_recorded_once_and_the_schedule_kept(store: RunStore) -> None:
    result = AssessmentResult("asmtres-1", WS, ORG, "run-1", "2026-01-01T00:00:00Z", True, False, checks={"pass": 2})
    store.assessments.record(result)
    with pytest.raises(ConditionFailed):
        store.assessments.record(result)
    assert store.assessments.current_id(WS) == "asmtres-1" and store.assessments.find("asmtres-1") == result
    assert store.assessments.current_of([WS, "ws-none"]) == {WS: result} and store.assessments.find("x") is None
    store.assessments.schedule_workspace(WS, ORG, 10.0, due_at=20.0)
    assert [(e["sk"], e["due_at"]) for e in store.assessments.schedule()] == [(WS, 20.0)]
    store.assessments.unschedule(WS)
    assert store.assessments.schedule() == [] and not store.assessments.enforced(ORG)


def test_the_capacity_item_is_written_from_its_version(store: RunStore) -> None:
    item, version = store.slots.read()
    assert version is None and item["leases"] == {}
    store.slots.write({**item, "leases": {"a": 1}}, None)
    with pytest.raises(ConditionFailed):
        store.slots.write({**item, "leases": {"b": 1}}, None)
    item, version = store.slots.read()
    assert version == 1 and item["leases"] == {"a": 1}
    store.slots.write({**item, "leases": {}}, 1)
    with pytest.raises(ConditionFailed):
        store.slots.write(item, 1)


def test_delete_all_of_a_workspace_and_of_an_organization(store: RunStore, table: Table) -> None:
    blobs, revoked, told = MemoryBlobs(), [], []
    run = _run("1", "2026-01-01T00:00:00Z")
    run.token_ids = ["at-run"]
    run.plan.artifact_key = "plans/run-1/plan.tfplan"
    store.save([(run, None), (_run("2", "2026-01-01T00:00:00Z", workspace="ws-other"), None)], None, {})
    store.logs.put(run.plan.id, 1, 0, b"log")
    blobs.put(f"logs/{run.plan.id}.log", b"archived")
    blobs.put("plans/run-1/plan.tfplan", b"plan")
    stage = _stage(run, POST_PLAN)
    store.stages.save(stage, new=True)
    result = _result(run, stage.id, 1)
    result.token_id = "at-task"
    store.results.save(result, new=True)
    store.results.put_token(result.id, "sealed")
    cv = ConfigurationVersion("cv-1", WS, ORG, "2026-01-01T00:00:00Z")
    store.configurations.create(cv)
    blobs.put(cv.blob_key, b"tar")
    store.tasks.create(RunTask("task-1", ORG, "Lint", "https://lint.example", "2026-01-01T00:00:00Z"))
    store.tasks.attach(WorkspaceTask("wstask-1", ORG, WS, "task-1", "mandatory", ["post_plan"], "2026-01-01T00:00:00Z"))
    TableJobQueue(table).enqueue(ORG, "plan", {"job_id": "plan-2", "run_id": "run-2", "phase": "plan"})

    def delete(**of: str) -> None:
        store.delete_all_of(**of, blobs=blobs, revoke=revoked.append, before_run_deleted=told.append)

    delete(workspace=WS)
    assert not store.exists("run-1") and store.exists("run-2") and told == ["run-1"]
    assert sorted(revoked) == ["at-run", "at-task"]
    assert store.events("run-1") == [] and store.logs.chunks(run.plan.id) == []
    assert [e["run_id"] for e in store.open_runs()] == ["run-2"]
    assert store.stages.of_run("run-1") == [] and store.results.find(result.id) is None
    assert store.results.token(result.id) is None and store.configurations.of_workspace(WS) == []
    assert store.tasks.attached_to(WS) == [] and store.tasks.attachments_of_task("task-1") == []
    assert all(blobs.head(k) is None for k in (f"logs/{run.plan.id}.log", "plans/run-1/plan.tfplan", cv.blob_key))
    assert store.tasks.find("task-1") is not None  # an organization's run tasks go with the organization
    delete(organization=ORG)
    assert store.tasks.of_organization(ORG) == [] and not store.tasks.name_taken(ORG, "Lint")
    assert TableJobQueue(table).queued(ORG) == []
    with pytest.raises(ValueError):
        delete()
