"""Ephemeral workspaces on memory adapters, through the API: `auto-destroy-at` and
`auto-destroy-activity-duration` validated (422, nothing written), cleared with null; an applied run is activity
(it pushes the due time); the reaper's sweep costs one query and no write while nothing is due, queues one
auto-applied destroy run for a due workspace however often it runs, sends each reminder once, and the destroy's
end clears `auto-destroy-at`. The sweep's clock is moved, nothing sleeps."""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from notification_helpers import create, notification_env, outbound, pump
from run_helpers import RunEnv, make_run_env
from terrace.adapters.table import Table


def _iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _epoch(iso: str) -> float:
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


def _patch(env: RunEnv, attributes: dict[str, Any]) -> Any:
    body = {"data": {"type": "workspaces", "attributes": attributes}}
    return env.api("PATCH", f"/workspaces/{env.workspace_id}", body)


def _attributes(env: RunEnv) -> dict[str, Any]:
    return dict(env.api("GET", f"/workspaces/{env.workspace_id}").json()["data"]["attributes"])


IN_TWO_DAYS = _iso(datetime.now(UTC) + timedelta(days=2))


@pytest.mark.parametrize(
    "attributes",
    [
        {"auto-destroy-at": "tomorrow"},
        {"auto-destroy-at": 1893456000},
        {"auto-destroy-at": "2099-01-01T00:00:00"},  # no zone
        {"auto-destroy-activity-duration": "14"},
        {"auto-destroy-activity-duration": "0d"},
        {"auto-destroy-activity-duration": "2w"},
        {"auto-destroy-activity-duration": "99999h"},
        {"auto-destroy-activity-duration": 14},
        {"auto-destroy-at": IN_TWO_DAYS, "auto-destroy-activity-duration": "3h"},
    ],
)
def test_bad_values_are_422_and_change_nothing(attributes: dict[str, Any]) -> None:
    env = make_run_env()
    before = _attributes(env)
    response = _patch(env, {**attributes, "description": "changed"})
    assert response.status_code == 422, response.text
    [error] = response.json()["errors"]
    assert error["source"]["pointer"].startswith("/data/attributes/auto-destroy")
    assert _attributes(env)["description"] == before["description"]
    assert env.container.table.get(env.workspace_id, "autodestroy") is None


def test_a_moment_already_past_is_taken_and_due_at_the_next_sweep() -> None:
    """As HCP's API takes it (go-tfe's TestWorkspacesCreate and TestWorkspacesAutoDestroy send 2025-01-01): stored
    and read back as sent, and the sweep's next look queues the destroy run."""
    env = make_run_env()
    env.upload_config()
    past = "2025-01-01T00:00:00Z"
    response = _patch(env, {"auto-destroy-at": past})
    assert response.status_code == 200, response.text
    assert response.json()["data"]["attributes"]["auto-destroy-at"].startswith(past[:19])
    assert _attributes(env)["auto-destroy-at"].startswith(past[:19])
    created = env.api(
        "POST",
        "/organizations/acme/workspaces",
        {"data": {"type": "workspaces", "attributes": {"name": "past-due", "auto-destroy-at": past}}},
    )
    assert created.status_code == 201, created.text
    assert created.json()["data"]["attributes"]["auto-destroy-at"].startswith(past[:19])
    assert env.container.auto_destroy.sweep_if_due() == {"queued": 2, "reminded": 0, "resynced": 0}
    runs = env.api("GET", f"/workspaces/{env.workspace_id}/runs").json()["data"]
    assert [r["attributes"]["source"] for r in runs if r["attributes"]["is-destroy"]] == ["tfe-auto-destroy"]


def test_set_read_and_clear_with_null() -> None:
    env = make_run_env()
    set_ = _patch(env, {"auto-destroy-at": IN_TWO_DAYS})
    assert set_.status_code == 200, set_.text
    assert set_.json()["data"]["attributes"]["auto-destroy-at"].startswith(IN_TWO_DAYS[:19])
    assert _attributes(env)["auto-destroy-activity-duration"] is None
    assert env.container.table.get(env.workspace_id, "autodestroy") is not None  # in the sweep's index
    assert _patch(env, {"auto-destroy-at": None}).status_code == 200
    assert _attributes(env)["auto-destroy-at"] is None
    assert env.container.table.get(env.workspace_id, "autodestroy") is None


def test_an_activity_duration_schedules_from_now_and_an_apply_pushes_it() -> None:
    env = notification_env()
    created = env.api(
        "POST",
        "/organizations/acme/workspaces",
        {"data": {"type": "workspaces", "attributes": {"name": "short", "auto-destroy-activity-duration": "3h"}}},
    )
    assert created.status_code == 201, created.text
    attrs = created.json()["data"]["attributes"]
    assert attrs["auto-destroy-activity-duration"] == "3h"
    assert abs(_epoch(attrs["auto-destroy-at"]) - (datetime.now(UTC).timestamp() + 3 * 3600)) < 60

    assert _patch(env, {"auto-destroy-activity-duration": "1d"}).status_code == 200
    earlier = _iso(datetime.now(UTC) + timedelta(hours=1))  # as if its last activity were 23 hours ago
    env.container.workspaces.mutate(env.workspace_id, lambda ws: dataclasses.replace(ws, auto_destroy_at=earlier))
    env.create_run(env.upload_config(), **{"auto-apply": True})
    env.work_next()
    env.work_next()
    pump(env)
    pushed = _attributes(env)["auto-destroy-at"]
    assert _epoch(pushed) > datetime.now(UTC).timestamp() + 23 * 3600
    marker = env.container.table.get(env.workspace_id, "autodestroy")
    assert marker is not None and marker["due"] == pushed
    assert _patch(env, {"auto-destroy-activity-duration": None}).status_code == 200
    assert _attributes(env)["auto-destroy-at"] is None  # the moment the duration gave goes with it


class Counting:
    def __init__(self, table: Table) -> None:
        self.table, self.calls = table, []

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.table, name)

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls.append(name)
            return method(*args, **kwargs)

        return counted


def test_the_sweep_costs_one_query_when_nothing_is_due() -> None:
    env = make_run_env()
    for i in range(20):
        body = {"data": {"type": "workspaces", "attributes": {"name": f"w{i}"}}}
        assert env.api("POST", "/organizations/acme/workspaces", body).status_code == 201
    assert _patch(env, {"auto-destroy-at": IN_TWO_DAYS}).status_code == 200  # one ephemeral, not due for a day
    markers = env.container.workspaces.markers
    counting = Counting(markers._table)
    markers._table = counting  # type: ignore[assignment]
    assert env.container.auto_destroy.sweep_if_due() is None
    assert counting.calls == ["query"]


def test_a_due_workspace_gets_one_auto_applied_destroy_run_and_its_end_clears_the_time() -> None:
    env = notification_env()
    create(env, enabled=True, triggers=["workspace:auto_destroy_reminder", "workspace:auto_destroy_run_results"])
    outbound(env).sent.clear()
    env.create_run(env.upload_config(), **{"auto-apply": True})
    env.work_next()
    env.work_next()
    pump(env)
    assert _patch(env, {"auto-destroy-at": IN_TWO_DAYS}).status_code == 200
    due = _epoch(IN_TWO_DAYS)
    sweep = env.container.auto_destroy
    clock = [due - 30 * 3600]
    sweep._now = lambda: clock[0]
    assert sweep.sweep_if_due() is None  # more than a day ahead: not even a reminder
    clock[0] = due - 20 * 3600
    assert sweep.sweep_if_due() == {"queued": 0, "reminded": 1, "resynced": 0}
    assert sweep.sweep_if_due() is None  # the 24-hour reminder was sent; the next look is at 12 hours
    clock[0] = due - 11 * 3600
    sweep.sweep_if_due()
    pump(env)
    reminders = [_body(request) for request in outbound(env).sent]
    assert [(b["notifications"][0]["trigger"], b["workspace_name"]) for b in reminders] == [
        ("workspace:auto_destroy_reminder", "app")
    ] * 2
    assert "24 hours" in reminders[0]["notifications"][0]["message"]
    assert "12 hours" in reminders[1]["notifications"][0]["message"]
    outbound(env).sent.clear()

    clock[0] = due + 1
    assert sweep.sweep_if_due() == {"queued": 1, "reminded": 0, "resynced": 0}
    assert sweep.sweep_if_due() is None  # its marker went with the run
    listed = env.api("GET", f"/workspaces/{env.workspace_id}/runs").json()["data"]
    [run] = [r for r in listed if r["attributes"]["is-destroy"]]
    assert run["attributes"]["source"] == "tfe-auto-destroy" and run["attributes"]["auto-apply"] is True
    env.work_next()  # the destroy plan
    env.work_next()  # its apply, unconfirmed
    assert env.run(run["id"])["attributes"]["status"] == "applied"
    pump(env)
    assert _attributes(env)["auto-destroy-at"] is None
    [result] = [_body(r) for r in outbound(env).sent]
    assert result["notifications"][0]["trigger"] == "workspace:auto_destroy_run_results"
    assert result["run_id"] == run["id"] and result["notifications"][0]["run_status"] == "applied"


def test_two_sweeps_of_the_same_due_time_queue_one_run() -> None:
    env = make_run_env()
    env.upload_config()
    assert _patch(env, {"auto-destroy-at": IN_TWO_DAYS}).status_code == 200
    marker = env.container.table.get(env.workspace_id, "autodestroy")
    sweep = env.container.auto_destroy
    sweep._now = lambda: _epoch(IN_TWO_DAYS) + 5
    sweep.sweep_if_due()
    env.container.table.put(marker)  # as if another process read the marker before the first dropped it
    sweep.sweep_if_due()
    runs = env.api("GET", f"/workspaces/{env.workspace_id}/runs").json()["data"]
    assert len([r for r in runs if r["attributes"]["is-destroy"]]) == 1


def _body(request: Any) -> dict[str, Any]:
    return dict(json.loads(request.body))


def test_values_sent_back_as_read_change_nothing() -> None:
    env = make_run_env()
    assert _patch(env, {"auto-destroy-activity-duration": "3h"}).status_code == 200
    read = _attributes(env)
    again = _patch(env, {"auto-destroy-at": read["auto-destroy-at"], "auto-destroy-activity-duration": "3h"})
    assert again.status_code == 200, again.text
    assert _attributes(env)["auto-destroy-at"] == read["auto-destroy-at"]  # not rescheduled from now
    beside_null = _patch(env, {"auto-destroy-at": None, "auto-destroy-activity-duration": "3h"})
    assert beside_null.status_code == 200 and _attributes(env)["auto-destroy-at"] == read["auto-destroy-at"]
    past = "2001-01-01T00:00:00.000Z"
    env.container.workspaces.mutate(
        env.workspace_id, lambda ws: dataclasses.replace(ws, auto_destroy_at=past, auto_destroy_activity_duration=None)
    )
    assert _patch(env, {"auto-destroy-at": past, "description": "x"}).status_code == 200  # due, not swept yet


def test_deleting_the_workspace_takes_its_marker() -> None:
    env = make_run_env()
    assert _patch(env, {"auto-destroy-at": IN_TWO_DAYS}).status_code == 200
    assert env.api("DELETE", f"/workspaces/{env.workspace_id}").status_code in (200, 204)
    assert env.container.table.get(env.workspace_id, "autodestroy") is None
