"""A workspace's Health tab (issue 45): the last assessment's time, drifted resources with the attributes that
changed, failing checks with their messages, assessments on and off, an assessment started now; the details (state
values) only for who may read a plan's JSON, and a plan too large to read is not read."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fastapi.testclient import TestClient
from run_helpers import RunEnv
from terrace.domain import assessments as model
from terrace.domain.runs import run_id_of
from terrace.services.runs import health
from terrace.web.app import create_app
from test_assessments import _custom_member, _drain, _enable, env
from ui_helpers import sign_in

__all__ = ["env"]  # the fixture: a workspace with an applied run and a state
PAGE = "/app/acme/workspaces/app/health"
PLAN = {
    "resource_drift": [
        {"address": "aws_s3_bucket.logs", "mode": "managed", "change": {"actions": ["update"],
         "before": {"acl": "private", "tags": {"team": "a"}, "id": "logs"},
         "after": {"acl": "public-read", "tags": {"team": "a"}, "id": "logs"}}},
        {"address": "null_resource.same", "mode": "managed", "change": {"actions": ["no-op"]}},
    ],
    "checks": [
        {"address": {"to_display": "check.health"}, "status": "fail",
         "instances": [{"problems": [{"message": "the endpoint answered 503"}]}]},
        {"address": {"to_display": "check.ok"}, "status": "pass"},
    ],
}  # fmt: skip


def browser(env: RunEnv, headers: dict[str, str] | None = None) -> TestClient:
    client = TestClient(create_app(env.container), base_url="https://testserver", follow_redirects=False)
    token = (headers or env.headers)["Authorization"].removeprefix("Bearer ")
    assert sign_in(client, token).status_code == 303
    return client


def csrf(client: TestClient) -> str:
    page = client.get(PAGE).text
    return page.split('name="csrf_token" value="', 1)[1].split('"', 1)[0]


def assess(env: RunEnv, plan: dict[str, Any] | bytes) -> None:
    spec = env.claim()
    run = env.container.run_store.load(run_id_of(spec["job_id"]))
    env.blobs.put(run.plan.json_key, plan if isinstance(plan, bytes) else json.dumps(plan).encode())
    finish = {"runner_id": "r1", "status": "finished", "has_changes": True}
    assert env.runner("POST", f"/jobs/{spec['job_id']}/finish", json=finish).status_code == 200
    _drain(env)


def test_the_health_tab_shows_drift_and_failing_checks_and_starts_an_assessment(env: RunEnv) -> None:
    owner = browser(env)
    first = owner.get(PAGE)
    assert first.status_code == 200 and "none yet" in first.text and 'aria-current="page">Health' in first.text
    token = csrf(owner)
    assert owner.post(f"{PAGE}/settings", data={"csrf_token": token, "enabled": "on"}).status_code == 303
    assert model.enabled(env.container.workspaces.load(env.workspace_id).extra)
    assert ">On</dd>" in owner.get(PAGE).text
    started = owner.post(f"{PAGE}/assess", data={"csrf_token": token})
    assert started.status_code == 303 and started.headers["location"] == f"{PAGE}?started=1"
    assess(env, PLAN)

    page = owner.get(PAGE).text
    assert 'id="last-assessment"><time datetime=' in page and "1 drifted" in page and "1 failing" in page
    assert "<code>aws_s3_bucket.logs</code>" in page and "null_resource.same" not in page
    assert '<td><code>acl</code></td><td><code class="before">&#34;private&#34;</code></td>' in page
    assert '<code class="after">&#34;public-read&#34;</code>' in page and "<code>tags</code>" not in page
    assert "<code>check.health</code>" in page and "the endpoint answered 503" in page and "check.ok" not in page

    assert owner.post(f"{PAGE}/settings", data={"csrf_token": token}).status_code == 303  # off
    assert not model.enabled(env.container.workspaces.load(env.workspace_id).extra)
    assert owner.post(f"{PAGE}/nope", data={"csrf_token": token}).status_code == 404

    reader = browser(env, _custom_member(env, "rita", runs="read", **{"state-versions": "none"}))
    shown = reader.get(PAGE)  # the counts, not the state values; no buttons
    assert shown.status_code == 200 and "1 drifted" in shown.text and "public-read" not in shown.text
    assert "your access does not let you read them" in shown.text and "Start an assessment now" not in shown.text
    refused = reader.post(f"{PAGE}/assess", data={"csrf_token": csrf(reader)})
    assert refused.status_code in (403, 404)


def test_nothing_to_assess_and_a_plan_too_large_to_read(env: RunEnv, monkeypatch: pytest.MonkeyPatch) -> None:
    owner = browser(env)
    body = {"data": {"type": "workspaces", "attributes": {"execution-mode": "local"}}}
    assert env.api("PATCH", f"/workspaces/{env.workspace_id}", body).status_code == 200
    refused = owner.post(f"{PAGE}/assess", data={"csrf_token": csrf(owner)})
    assert refused.status_code == 409 and "nothing to assess yet" in refused.text and 'role="alert"' in refused.text
    body["data"]["attributes"]["execution-mode"] = "remote"
    assert env.api("PATCH", f"/workspaces/{env.workspace_id}", body).status_code == 200
    _enable(env)
    assert owner.post(f"{PAGE}/assess", data={"csrf_token": csrf(owner)}).status_code == 303
    assess(env, PLAN)
    monkeypatch.setattr(health, "DETAIL_MAX_BYTES", 64)
    read: list[str] = []
    real_get = env.container.blobs.get
    monkeypatch.setattr(env.container.blobs, "get", lambda key, *a: read.append(key) or real_get(key, *a))
    page = owner.get(PAGE).text
    assert "too large to show here" in page and "1 drifted" in page and read == []


def test_the_notification_form_offers_the_assessment_and_auto_destroy_triggers(env: RunEnv) -> None:
    owner = browser(env)
    page = owner.get("/app/acme/workspaces/app/notifications").text
    for trigger in ("assessment:drifted", "assessment:check_failure", "assessment:failed",
                    "workspace:auto_destroy_reminder", "workspace:auto_destroy_run_results"):  # fmt: skip
        assert f'name="trigger-{trigger}"' in page, trigger
    token = page.split('name="csrf_token" value="', 1)[1].split('"', 1)[0]
    form = {"csrf_token": token, "name": "health", "destination-type": "email", "email-addresses": "",
            "trigger-assessment:drifted": "on", "trigger-run:errored": "on"}  # fmt: skip
    assert owner.post("/app/acme/workspaces/app/notifications", data=form).status_code == 303
    [made] = env.api("GET", f"/workspaces/{env.workspace_id}/notification-configurations").json()["data"]
    assert made["attributes"]["triggers"] == ["run:errored", "assessment:drifted"]
