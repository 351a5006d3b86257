"""The run pages' facts beyond the run itself: where a run came from and how long each phase took, why it waits,
its raw logs and downloads (checked as the API checks them), and a resource's history from the search."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from fastapi.testclient import TestClient
from run_helpers import RunEnv, make_run_env
from state_helpers import make_env, null_resource, other_user, state_bytes
from terrace.domain import run_timing
from terrace.domain.principal import PrincipalKind
from terrace.services.state import resource_history
from test_web_ui import browser, signed_in
from test_web_ui_runs import claim_next, finish, put_log, ui
from ui_helpers import sign_in

BASE = "/app/acme/workspaces/app"


@pytest.fixture
def env() -> RunEnv:
    return make_run_env()


def test_phase_times_follow_the_status_timestamps() -> None:
    stamps = {
        "pending-at": "2026-01-01T10:00:00.000Z",
        "plan-queueable-at": "2026-01-01T10:00:00.000Z",
        "plan-queued-at": "2026-01-01T10:00:05.000Z",
        "planning-at": "2026-01-01T10:00:07.000Z",
        "planned-at": "2026-01-01T10:01:07.000Z",
        "cost-estimating-at": "2026-01-01T10:01:07.000Z",
        "cost-estimated-at": "2026-01-01T10:01:07.000Z",
        "confirmed-at": "2026-01-01T10:05:07.000Z",
        "apply-queued-at": "2026-01-01T10:05:07.000Z",
        "applying-at": "2026-01-01T10:05:09.000Z",
        "applied-at": "2026-01-01T10:05:39.000Z",
    }
    now = datetime(2026, 1, 1, 11, tzinfo=UTC)
    times = {t.phase: t.seconds for t in run_timing.phase_times(stamps, "applied", now)}
    assert times == {
        "Pending": 5,
        "Plan queued": 2,
        "Planning": 60,
        "Awaiting confirmation": 240,
        "Apply queued": 2,
        "Applying": 30,
    }
    assert run_timing.total_seconds(stamps, "applied", now) == 339
    del stamps["applied-at"]  # still applying: its time runs until now
    [*_, applying] = run_timing.phase_times(stamps, "applying", now)
    assert applying.ongoing and applying.seconds == 3600 - 309
    assert [run_timing.duration(s) for s in (0.2, 12, 64, 3720)] == ["<1s", "12s", "1m 4s", "1h 2m"]


def test_a_run_says_which_client_queued_it(env: RunEnv) -> None:
    cv = env.upload_config()
    plain = env.create_run(cv)
    assert plain["attributes"]["source"] == "tfe-api"
    sources = {}
    for headers, expected in (
        ({"Terraform-Version": "1.9.0"}, "terraform"),
        ({"Terraform-Version": "1.9.0", "X-Terraform-Integration": "cloud"}, "terraform+cloud"),
    ):
        body = {
            "data": {
                "type": "runs",
                "attributes": {"plan-only": True},
                "relationships": {"workspace": {"data": {"type": "workspaces", "id": env.workspace_id}}},
            }
        }
        created = env.client.post("/api/v2/runs", json=body, headers={**env.headers, **headers})
        assert created.status_code == 201, created.text
        sources[created.json()["data"]["id"]] = expected
        assert created.json()["data"]["attributes"]["source"] == expected
    client = ui(env)
    page = client.get(f"{BASE}/runs")
    token = page.text.split('name="csrf_token" value="')[1].split('"')[0]
    queued = client.post(f"{BASE}/runs", data={"csrf_token": token, "message": "from the UI"})
    ui_run = queued.headers["location"].rsplit("/", 1)[1]
    assert env.run(ui_run)["attributes"]["source"] == "tfe-ui"
    assert 'via <strong id="run-source">UI</strong>' in client.get(f"{BASE}/runs/{ui_run}").text
    listed = client.get(f"{BASE}/runs").text
    assert listed.count('class="muted run-meta">CLI · ') == 2 and 'class="muted run-meta">UI · ' in listed


def _reader(env: RunEnv) -> tuple[TestClient, str]:
    """A member whose team may read the workspace's runs but not its state (custom access)."""
    team = env.api("POST", "/organizations/acme/teams", {"data": {"type": "teams", "attributes": {"name": "ops"}}})
    team_id = team.json()["data"]["id"]
    rel = {
        "team": {"data": {"type": "teams", "id": team_id}},
        "workspace": {"data": {"type": "workspaces", "id": env.workspace_id}},
    }
    attrs = {"access": "custom", "runs": "read", "state-versions": "none", "variables": "none"}
    assert (
        env.api(
            "POST", "/team-workspaces", {"data": {"type": "team-workspaces", "attributes": attrs, "relationships": rel}}
        ).status_code
        == 201
    )
    invite = {
        "data": {
            "type": "organization-memberships",
            "attributes": {"email": "rita@example.com"},
            "relationships": {"teams": {"data": [{"type": "teams", "id": team_id}]}},
        }
    }
    member = env.api("POST", "/organizations/acme/organization-memberships", invite).json()["data"]
    secret = env.container.accounts.issue_token(
        PrincipalKind.USER, member["relationships"]["user"]["data"]["id"]
    ).secret
    headers = {"Authorization": f"Bearer {secret}"}
    accept = env.client.post(f"/api/v2/organization-memberships/{member['id']}/actions/accept", headers=headers)
    assert accept.status_code == 200, accept.text
    return ui(env, secret), secret


def test_raw_logs_and_plan_json_download_as_the_api_serves_them(env: RunEnv) -> None:
    run = env.create_run(env.upload_config())
    client = ui(env)
    assert client.get(f"{BASE}/runs/{run['id']}/logs/plan/raw").status_code == 404  # not started
    spec = claim_next(env)
    put_log(env, spec, 0, b"\x1b[1mInitializing\x1b[0m <b>\r\nPlan: 1 to add\n")
    plan = {"resource_changes": [{"address": "null_resource.a", "change": {"actions": ["create"]}}]}
    env.blobs.put(spec["plan_json_upload_url"].split("memory://blobs/")[1].split("?")[0], json.dumps(plan).encode())
    finish(env, spec, resource_additions=1)
    raw = client.get(f"{BASE}/runs/{run['id']}/logs/plan/raw")
    assert raw.status_code == 200 and raw.headers["content-type"] == "text/plain; charset=utf-8"
    assert raw.text == "Initializing <b>\nPlan: 1 to add\n" and "content-disposition" not in raw.headers
    saved = client.get(f"{BASE}/runs/{run['id']}/logs/plan/raw?download=1")
    assert saved.headers["content-disposition"] == f'attachment; filename="{run["id"]}-plan.log"'
    page = client.get(f"{BASE}/runs/{run['id']}").text
    assert 'id="plan-log-raw"' in page and 'id="plan-json-download"' in page and 'id="apply-log-raw"' not in page
    got = client.get(f"{BASE}/runs/{run['id']}/plan.json")
    assert got.status_code == 200 and json.loads(got.content) == plan
    assert got.headers["content-disposition"] == f'attachment; filename="{run["id"]}-plan.json"'
    # a reader of runs who may not read state: the log as the API's log-read URL, no plan JSON (json-output: 404)
    reader, secret = _reader(env)
    assert reader.get(f"{BASE}/runs/{run['id']}/logs/plan/raw").text == raw.text
    refused = reader.get(f"{BASE}/runs/{run['id']}/plan.json")
    assert refused.status_code == 404 and "text/html" in refused.headers["content-type"]
    plan_id = "plan-" + run["id"].removeprefix("run-")
    api_refused = env.client.get(f"/api/v2/plans/{plan_id}/json-output", headers={"Authorization": f"Bearer {secret}"})
    assert api_refused.status_code == 403  # the API refuses this reader too (the UI shows every 403 as its 404 page)
    assert env.api("GET", f"/plans/{plan_id}/json-output", follow_redirects=False).status_code == 307  # the owner's
    assert 'id="plan-json-download"' not in reader.get(f"{BASE}/runs/{run['id']}").text


def test_the_waiting_panel_says_what_a_run_waits_for(env: RunEnv) -> None:
    cv = env.upload_config()
    first = env.create_run(cv)
    second = env.create_run(cv)
    client = ui(env)
    queued = client.get(f"{BASE}/runs/{first['id']}/live").text
    assert "waits for a runner of this organization: position 1 in the organization's queue" in queued
    pending = client.get(f"{BASE}/runs/{second['id']}/live").text
    assert "Position 2 of 2 in the queue of workspace app" in pending
    assert f'runs/{first["id"]}"><code>{first["id"]}</code></a> ahead of it (Plan queued: ' in pending
    assert "which holds the workspace's lock." in pending and 'id="run-wait-lock"' not in pending
    spec = claim_next(env)
    claimed = client.get(f"{BASE}/runs/{first['id']}/live").text
    assert "Runner <code>r1</code>" in claimed and "has claimed its plan since" in claimed
    finish(env, spec, has_changes=False)  # nothing to apply: the next run starts
    assert "Why is this run waiting" not in client.get(f"{BASE}/runs/{first['id']}/live").text
    assert "waits for a runner" in client.get(f"{BASE}/runs/{second['id']}/live").text


def test_a_run_behind_a_users_lock_names_the_user() -> None:
    env = make_run_env()
    locked = env.api("POST", f"/workspaces/{env.workspace_id}/actions/lock", {"reason": "maintenance"})
    assert locked.status_code == 200, locked.text
    run = env.create_run(env.upload_config())
    live = ui(env).get(f"{BASE}/runs/{run['id']}/live").text
    assert "Position 1 of 1 in the queue" in live and 'id="run-wait-ahead"' not in live
    assert f'held by\n      <a href="{BASE}">alice</a> (maintenance)' in live


def test_a_resources_history_lists_the_versions_that_changed_it(monkeypatch: pytest.MonkeyPatch) -> None:
    env = make_env()
    env.lock()
    ids = ["i-1", "i-1", "i-2", "i-2", "i-3"]  # serial 1 creates it, 3 and 5 change it
    for serial, rid in enumerate(ids, start=1):
        resources = [null_resource("web", rid), null_resource("other", f"o-{serial}")]
        assert env.push(state_bytes(serial, resources=resources), serial).status_code == 201
    env.drain_events()
    client = signed_in(env)
    search = client.get("/app/acme/search", params={"q": "null_resource.web"}).text
    link = "/app/acme/workspaces/prod/resources/history?address=null_resource.web"
    assert f'href="{link}"' in search
    page = client.get(link).text
    assert page.count('class="history-entry"') == 3 and "3 changes in" in page
    assert "Changed</span>\n    in serial 5" in page and "Added</span>\n    in serial 1" in page
    assert "<code>&#34;i-2&#34;</code>" in page and "o-4" not in page  # its attributes only
    monkeypatch.setattr(resource_history, "PAGE", 2)  # bounded pages: 2 versions each, then the older ones
    first = client.get(link).text
    assert first.count('class="history-entry"') == 1 and 'id="history-older"' in first
    older = first.split('id="history-older" href="')[1].split('"')[0].replace("&amp;", "&")
    second = client.get(older).text
    assert "Changed</span>\n    in serial 3" in second
    assert client.get(link.replace("web", "nothing")).status_code == 200
    assert client.get(link + "&before=sv-unknown").status_code == 404
    assert client.get("/app/acme/workspaces/prod/resources/history?address=").status_code == 422
    stranger = browser(env)  # another organization's owner: the workspace is not there for them
    assert sign_in(stranger, other_user(env)[0]).status_code == 303
    hidden = stranger.get(link)
    absent = stranger.get(link.replace("/prod/", "/nowhere/"))
    assert hidden.status_code == absent.status_code == 404 and "i-2" not in hidden.text
