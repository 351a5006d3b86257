"""Task stages on the memory container with a scripted participant: the run waits in `<stage>_running`, goes on when
the participant passes, errors when it fails, awaits an override; a run nothing takes part in is unchanged."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
from run_helpers import RunEnv, make_run_env
from terrace.adapters.memory_events import MemoryEventPublisher
from terrace.adapters.table import Table
from terrace.domain.principal import PrincipalKind
from terrace.services.runs.stage_participants import StageContext, Verdict, stage_progressed


@dataclass
class Scripted:
    """Takes part in the stages it is told to, with the verdict it is told."""

    kind: str = "task-results"
    stages: set[str] = field(default_factory=set)
    prepared: set[str] = field(default_factory=set)
    verdicts: dict[str, Verdict] = field(default_factory=dict)
    begun: list[StageContext] = field(default_factory=list)
    overrides: list[str] = field(default_factory=list)

    def prepare(self, context: StageContext) -> list[str]:
        return [f"tr-{context.stage}"] if context.stage in self.prepared else []

    def begin(self, context: StageContext) -> list[str]:
        if context.stage not in self.stages:
            return []
        self.begun.append(context)
        return [f"tr-{context.stage}"]

    def verdict(self, context: StageContext) -> Verdict:
        return self.verdicts.get(context.stage, "pending")

    def overridden(self, context: StageContext) -> None:
        self.overrides.append(context.stage_id)


@pytest.fixture
def env() -> RunEnv:
    return make_run_env()


def take_part(env: RunEnv, **script: Any) -> Scripted:
    participant = Scripted(**script)
    env.take_part(participant)
    return participant


def deliver(env: RunEnv) -> None:
    """What the events worker does: hand every published event to the subscriptions (until none is left)."""
    publisher = env.container.publisher
    assert isinstance(publisher, MemoryEventPublisher)
    while publisher.events:
        pending, publisher.events[:] = list(publisher.events), []
        for event in pending:
            env.container.events.handle(event)


def progressed(env: RunEnv, run: dict[str, Any], stage: str) -> None:
    order = ("pre_plan", "post_plan", "pre_apply").index(stage) + 1
    env.container.publisher.publish(stage_progressed(f"ts-{run['id'].split('-', 1)[1]}-{order}", run["id"]))
    deliver(env)


def status(env: RunEnv, run: dict[str, Any]) -> str:
    return str(env.run(run["id"])["attributes"]["status"])


def stages(env: RunEnv, run: dict[str, Any]) -> list[dict[str, Any]]:
    response = env.api("GET", f"/runs/{run['id']}/task-stages")
    assert response.status_code == 200, response.text
    return list(response.json()["data"])


def test_a_run_nothing_takes_part_in_is_unchanged(env: RunEnv) -> None:
    take_part(env)  # registered, but takes part in nothing
    writes: list[Any] = []
    table: Table = env.container.table
    original = table.put

    def counting(item: dict[str, Any], **kwargs: Any) -> None:
        writes.append(item["pk"])
        original(item, **kwargs)

    table.put = counting  # type: ignore[method-assign]
    run = env.create_run(env.upload_config())
    env.work_next()
    assert env.api("POST", f"/runs/{run['id']}/actions/apply", {}).status_code == 202
    env.work_next()
    deliver(env)
    assert status(env, run) == "applied"
    assert not [pk for pk in writes if pk.startswith("ts-")]
    document = env.run(run["id"])
    assert document["relationships"]["task-stages"]["data"] == []
    events = [e["attributes"]["action"] for e in env.api("GET", f"/runs/{run['id']}/run-events").json()["data"]]
    assert not [e for e in events if "pre_" in e or "post_" in e]
    assert stages(env, run) == []


def test_pre_plan_holds_the_plan_until_the_participant_passes(env: RunEnv) -> None:
    participant = take_part(env, stages={"pre_plan"})
    run = env.create_run(env.upload_config())
    assert status(env, run) == "pre_plan_running"
    assert env.queued() == []  # no plan job while the stage runs
    deliver(env)  # the run's own status change looks once: still pending
    assert status(env, run) == "pre_plan_running"
    [stage] = stages(env, run)
    assert stage["attributes"]["stage"] == "pre_plan" and stage["attributes"]["status"] == "running"
    assert stage["relationships"]["task-results"]["data"] == [{"type": "task-results", "id": "tr-pre_plan"}]
    participant.verdicts["pre_plan"] = "passed"
    progressed(env, run, "pre_plan")
    assert status(env, run) == "plan_queued"
    assert env.api("GET", f"/task-stages/{stage['id']}").json()["data"]["attributes"]["status"] == "passed"
    env.work_next()
    assert status(env, run) == "cost_estimated"
    events = [e["attributes"]["action"] for e in env.api("GET", f"/runs/{run['id']}/run-events").json()["data"]]
    # (events of writes within the same millisecond may interleave: compare what was passed through)
    assert {"pending", "pre_plan_running", "pre_plan_completed", "plan_queued"} <= set(events)
    assert len(participant.begun) == 1


def test_post_plan_passes_then_the_run_awaits_confirmation_and_applies(env: RunEnv) -> None:
    participant = take_part(env, stages={"post_plan"}, prepared={"post_plan"})
    run = env.create_run(env.upload_config())
    assert status(env, run) == "plan_queued"  # a prepared stage waits, pending, until the run reaches it
    [stage] = stages(env, run)
    assert stage["attributes"]["status"] == "pending"
    included = env.api("GET", f"/runs/{run['id']}?include=task_stages").json()["included"]
    assert [i["id"] for i in included if i["type"] == "task-stages"] == [stage["id"]]
    env.work_next()
    assert status(env, run) == "post_plan_running"
    assert participant.begun[0].plan_json_key is not None
    participant.verdicts["post_plan"] = "passed"
    progressed(env, run, "post_plan")
    document = env.run(run["id"])["attributes"]
    assert document["status"] == "post_plan_completed" and document["actions"]["is-confirmable"] is True
    assert env.api("POST", f"/runs/{run['id']}/actions/apply", {}).status_code == 202
    assert status(env, run) == "apply_queued"
    env.work_next()
    assert status(env, run) == "applied"


def test_a_failed_stage_errors_the_run_and_releases_the_workspace(env: RunEnv) -> None:
    participant = take_part(env, stages={"post_plan"})
    run = env.create_run(env.upload_config())
    env.work_next()
    participant.verdicts["post_plan"] = "failed"
    progressed(env, run, "post_plan")
    document = env.run(run["id"])["attributes"]
    assert document["status"] == "errored"
    assert "post-plan task stage failed" in document["error-message"]
    assert stages(env, run)[0]["attributes"]["status"] == "failed"
    ws = env.api("GET", f"/workspaces/{env.workspace_id}").json()["data"]
    assert ws["attributes"]["locked"] is False


def test_pre_apply_holds_an_auto_apply_until_it_passes(env: RunEnv) -> None:
    participant = take_part(env, stages={"pre_apply"})
    run = env.create_run(env.upload_config(), **{"auto-apply": True})
    env.work_next()
    assert status(env, run) == "pre_apply_running"
    assert env.queued() == []
    participant.verdicts["pre_apply"] = "passed"
    progressed(env, run, "pre_apply")
    assert status(env, run) == "apply_queued"
    env.work_next()
    assert status(env, run) == "applied"


def test_awaiting_override_then_an_owner_overrides(env: RunEnv) -> None:
    participant = take_part(env, stages={"post_plan"})
    run = env.create_run(env.upload_config())
    env.work_next()
    participant.verdicts["post_plan"] = "awaiting_override"
    progressed(env, run, "post_plan")
    document = env.run(run["id"])["attributes"]
    assert document["status"] == "post_plan_awaiting_decision"
    assert document["actions"]["is-discardable"] is True and document["actions"]["is-confirmable"] is False
    [stage] = stages(env, run)
    assert stage["attributes"]["actions"]["is-overridable"] is True
    assert stage["attributes"]["permissions"]["can-override"] is True
    response = env.api("POST", f"/task-stages/{stage['id']}/actions/override", {"comment": "known risk"})
    assert response.status_code == 200, response.text
    assert response.json()["data"]["attributes"]["status"] == "passed"
    assert participant.overrides == [stage["id"]]
    assert status(env, run) == "post_plan_completed"
    again = env.api("POST", f"/task-stages/{stage['id']}/actions/override", {})
    assert again.status_code == 409


def test_a_run_waiting_for_a_decision_can_be_discarded_and_its_stage_ends(env: RunEnv) -> None:
    participant = take_part(env, stages={"post_plan"})
    run = env.create_run(env.upload_config())
    env.work_next()
    participant.verdicts["post_plan"] = "awaiting_override"
    progressed(env, run, "post_plan")
    assert env.api("POST", f"/runs/{run['id']}/actions/discard", {}).status_code == 202
    deliver(env)
    assert status(env, run) == "discarded"
    assert stages(env, run)[0]["attributes"]["status"] == "canceled"


def test_a_waiting_run_can_be_canceled_and_a_stage_it_never_reached_is_unreachable(env: RunEnv) -> None:
    take_part(env, stages={"pre_plan"}, prepared={"pre_plan", "post_plan"})
    run = env.create_run(env.upload_config())
    assert status(env, run) == "pre_plan_running"
    assert env.run(run["id"])["attributes"]["actions"]["is-cancelable"] is True
    assert env.api("POST", f"/runs/{run['id']}/actions/cancel", {}).status_code == 202
    deliver(env)
    assert status(env, run) == "canceled"
    assert [s["attributes"]["status"] for s in stages(env, run)] == ["canceled", "unreachable"]


def test_the_reaper_decides_a_stage_whose_event_was_lost(env: RunEnv) -> None:
    participant = take_part(env, stages={"pre_plan"})
    run = env.create_run(env.upload_config())
    participant.verdicts["pre_plan"] = "errored"  # e.g. its time limit passed; no event came
    summary = env.container.reaper.reap_once()
    assert summary["staged"] == 1
    assert status(env, run) == "errored"


def test_stages_of_hidden_or_absent_runs_are_the_same_404(env: RunEnv) -> None:
    take_part(env, stages={"pre_plan"})
    run = env.create_run(env.upload_config())
    [stage] = stages(env, run)
    absent = env.api("GET", "/task-stages/ts-nope-1")
    assert absent.status_code == 404
    other = env.container.accounts.create_user("mallory", "m@example.com")
    token = env.container.accounts.issue_token(PrincipalKind.USER, other.id).secret
    hidden = env.client.get(f"/api/v2/task-stages/{stage['id']}", headers={"Authorization": f"Bearer {token}"})
    assert hidden.status_code == 404
    assert hidden.json()["errors"][0]["detail"] == absent.json()["errors"][0]["detail"].replace(
        "ts-nope-1", stage["id"]
    )
