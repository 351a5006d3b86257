"""The UI's one status model (`web/ui/run_labels.py: describe`): runs waiting for a person after a policy or a run
task (a confirmation, a policy override) read as such and count in "Needs attention" on the workspace list, which
shows each workspace's current run (not a newer run queued behind it); a speculative plan with changes reads
"Planned (N to add)". The run page, the runs list, the workspace list and the overview show the same words."""

from __future__ import annotations

import re

import pytest
from run_helpers import RunEnv, make_run_env
from terrace.domain import runs as rs
from terrace.domain.runs import PhaseState, Run
from terrace.web.ui.run_labels import describe
from test_task_stages import Scripted, progressed
from test_web_ui_runs import ui


def a_run(status: str, **extra: object) -> Run:
    return Run("run-x", "acme", "ws-x", "cv-x", "2026-01-01T00:00:00Z", "alice", status=status, **extra)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("run", "label", "tone", "needs_person"),
    [
        (a_run(rs.POST_PLAN_COMPLETED), "Needs confirmation", "attention", True),
        (a_run(rs.POST_PLAN_AWAITING_DECISION), "Needs policy override", "attention", True),
        (a_run(rs.COST_ESTIMATED), "Needs confirmation", "attention", True),
        (a_run(rs.PLANNED_AND_SAVED), "Plan saved", "attention", True),
        (a_run(rs.POST_PLAN_RUNNING), "Checking policies and tasks", "running", False),
        (a_run(rs.PENDING), "Pending", "queued", False),
        (a_run(rs.APPLIED), "Applied", "done", False),
        (a_run(rs.PLANNED_AND_FINISHED), "No changes", "done", False),
        (
            a_run(
                rs.PLANNED_AND_FINISHED,
                plan_only=True,
                plan=PhaseState("plan-x", has_changes=True, additions=2, destructions=1),
            ),
            "Planned (2 to add, 1 to destroy)",
            "done",
            False,
        ),
        (a_run(rs.ERRORED), "Errored", "errored", False),
    ],
)
def test_one_function_maps_a_run_to_its_label_colour_and_whether_it_needs_a_person(
    run: Run, label: str, tone: str, needs_person: bool
) -> None:
    shown = describe(run)
    assert (shown.label, shown.tone, shown.needs_person) == (label, tone, needs_person)
    assert shown.group == ("attention" if needs_person else {"queued": "running"}.get(tone, tone))


@pytest.fixture
def env() -> RunEnv:
    return make_run_env()


def workspace(env: RunEnv, name: str) -> str:
    body = {"data": {"type": "workspaces", "attributes": {"name": name}}}
    created = env.api("POST", "/organizations/acme/workspaces", body)
    assert created.status_code == 201, created.text
    return str(created.json()["data"]["id"])


def row_of(page: str, name: str) -> str:
    found = re.search(rf'<tr>\s*<td><a href="/app/acme/workspaces/{name}">.*?</tr>', page, re.S)
    assert found, f"no row for {name}"
    return found.group(0)


def test_runs_waiting_for_a_person_after_a_policy_count_in_needs_attention(env: RunEnv) -> None:
    checks = Scripted(kind="policy-evaluations", stages={"post_plan"})
    env.take_part(checks)
    waiting = env.create_run(env.upload_config())  # app: passes its checks, then waits for a confirmation
    env.work_next()
    checks.verdicts["post_plan"] = "passed"
    progressed(env, waiting, "post_plan")
    assert env.run(waiting["id"])["attributes"]["status"] == rs.POST_PLAN_COMPLETED
    behind = env.create_run(env.upload_config(), message="queued behind")  # the newest run, pending behind it
    assert env.run(behind["id"])["attributes"]["status"] == rs.PENDING

    gate = workspace(env, "gate")  # fails a mandatory policy: waits for an override
    overridden = env.create_run(env.upload_config(workspace_id=gate), gate)
    env.work_next()
    checks.verdicts["post_plan"] = "awaiting_override"
    progressed(env, overridden, "post_plan")
    assert env.run(overridden["id"])["attributes"]["status"] == rs.POST_PLAN_AWAITING_DECISION

    spec = workspace(env, "spec")  # a speculative plan with changes
    planned = env.create_run(env.upload_config(workspace_id=spec), spec, **{"plan-only": True})
    env.work_next()
    checks.verdicts["post_plan"] = "passed"
    progressed(env, planned, "post_plan")
    assert env.run(planned["id"])["attributes"]["status"] == rs.PLANNED_AND_FINISHED

    client = ui(env)
    page = client.get("/app/acme/workspaces").text
    assert "Needs confirmation" in row_of(page, "app") and "Pending" not in row_of(page, "app")
    assert f"/runs/{waiting['id']}" in row_of(page, "app")  # its current run, not the newest
    assert "Needs policy override" in row_of(page, "gate")
    assert "Planned (1 to add)" in row_of(page, "spec") and "No changes" not in page
    assert "<strong>2</strong> workspaces need attention" in page
    assert '<option value="attention">Needs attention (2)</option>' in page
    attention = client.get("/app/acme/workspaces?status=attention").text
    assert '/app/acme/workspaces/app"' in attention and '/app/acme/workspaces/gate"' in attention
    assert '/app/acme/workspaces/spec"' not in attention

    overview = client.get("/app/acme/workspaces/app").text  # the overview: the same run, the same words
    current = re.search(r'<dd id="current-run".*?</dd>', overview, re.S)
    assert current and waiting["id"] in current.group(0) and "Needs confirmation" in current.group(0)
    runs = client.get("/app/acme/workspaces/gate/runs").text
    assert 'data-status="post_plan_awaiting_decision" data-needs-person="true">Needs policy override' in runs
    run_page = client.get(f"/app/acme/workspaces/app/runs/{waiting['id']}").text
    assert 'id="run-status" data-status="post_plan_completed" data-needs-person="true">Needs confirmation' in run_page
