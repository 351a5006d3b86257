"""The audit trail, in process: a day of actions through the API and the UI reads back complete, in order, with
the right actors and no variable value; a failed write never fails the action and is counted and logged; an
organization token reads HCP's shape; owners read with filters; a site auditor reads every organization's trail
and settings and can change nothing."""

from __future__ import annotations

import json
import logging
import time
from typing import Any

import pytest
from fastapi.testclient import TestClient
from run_helpers import RunEnv, make_run_env
from state_helpers import sv_body
from terrace.adapters.table import ConditionFailed
from terrace.domain.principal import PrincipalKind
from terrace.web.app import create_app
from ui_helpers import sign_in

SECRET = "hunter2-never-in-the-trail"
STATE = json.dumps({"version": 4, "serial": 1, "lineage": "4f1f6e2a-0000-4000-8000-00000000a0d1", "outputs": {},
                    "resources": [], "terraform_version": "1.11.0"}).encode()  # fmt: skip


@pytest.fixture(scope="module")
def day() -> tuple[RunEnv, dict[str, Any]]:
    """One day of actions of alice's: variables, a lock, a state upload and read, a run confirmed, a token, a
    UI sign-in and sign-out. Returns the environment and what each action made."""
    env = make_run_env()
    made: dict[str, Any] = {}
    ws = env.workspace_id
    var = {"data": {"type": "vars", "attributes": {"key": "db_password", "value": SECRET, "category": "terraform"}}}
    response = env.api("POST", f"/workspaces/{ws}/vars", var)
    assert response.status_code == 201, response.text
    made["var"] = response.json()["data"]["id"]
    assert env.api("POST", f"/workspaces/{ws}/actions/lock", {"reason": "upload"}).status_code == 200
    pushed = env.api(
        "POST", f"/workspaces/{ws}/state-versions", sv_body(STATE, 1, lineage=json.loads(STATE)["lineage"])
    )
    assert pushed.status_code == 201, pushed.text
    made["sv"] = pushed.json()["data"]["id"]
    assert env.api("POST", f"/workspaces/{ws}/actions/unlock").status_code == 200
    read = env.api("GET", f"/state-versions/{made['sv']}/download", follow_redirects=False)
    assert read.status_code in (200, 302, 307), read.text
    run = env.create_run(env.upload_config())
    made["run"] = run["id"]
    env.work_next()
    applied = env.api("POST", f"/runs/{run['id']}/actions/apply", {"comment": "ok"})
    assert applied.status_code == 202, applied.text
    browser = TestClient(create_app(env.container), base_url="https://testserver", follow_redirects=False)
    token = env.headers["Authorization"].split()[1]
    assert sign_in(browser, token).status_code == 303
    return env, made


def trail(env: RunEnv, **query: str) -> list[dict[str, Any]]:
    response = env.client.get("/api/v2/organizations/acme/audit-trail", headers=env.headers, params=query)
    assert response.status_code == 200, response.text
    return list(response.json()["data"])


def test_a_day_of_actions_reads_back_complete_and_in_order(day: tuple[RunEnv, dict[str, Any]]) -> None:
    env, made = day
    events = trail(env, **{"page[size]": "100"})
    actions = [e["resource"]["action"] for e in events]
    expected = ["workspace.create", "variable.create", "workspace.lock",
                "state-version.create", "workspace.unlock", "state-version.read", "configuration-version.create",
                "run.create", "run.apply"]  # fmt: skip
    assert [a for a in actions if a in expected] == expected, actions
    assert [e["timestamp"] for e in events] == sorted(e["timestamp"] for e in events)
    by_action = {e["resource"]["action"]: e for e in events}
    variable = by_action["variable.create"]
    assert variable["resource"]["id"] == made["var"] and variable["resource"]["meta"]["name"] == "db_password"
    assert by_action["run.apply"]["resource"]["id"] == made["run"]
    assert by_action["state-version.read"]["resource"]["id"] == made["sv"]
    for event in events:
        if event["resource"]["action"] in expected:
            assert event["auth"]["description"] == "alice" and event["auth"]["kind"] == "user"
            assert event["auth"]["token_id"] and event["auth"]["organization_id"] == "acme"
            assert event["resource"]["outcome"] < 400 and event["request"]["source"]
    # the runner's own traffic (its job poll, heartbeats, log chunks) is no action on anything
    assert not any(e["resource"]["meta"]["route"].startswith("POST /api/runner/jobs/next") for e in events)


def test_no_value_of_any_request_is_in_the_trail(day: tuple[RunEnv, dict[str, Any]]) -> None:
    env, _ = day
    token = env.headers["Authorization"].split()[1]
    everything = json.dumps(trail(env)) + json.dumps(env.client.get("/api/v2/admin/audit-trail",
                                                                      headers=env.headers).json())  # fmt: skip
    assert SECRET not in everything and token not in everything


def test_sign_ins_and_user_tokens_are_the_sites_events(day: tuple[RunEnv, dict[str, Any]]) -> None:
    env, _ = day
    alice = env.container.accounts.authenticate(env.headers["Authorization"].split()[1])
    created = env.api("POST", f"/users/{alice.subject_id}/authentication-tokens",
                      {"data": {"type": "authentication-tokens", "attributes": {"description": "ci"}}})  # fmt: skip
    assert created.status_code == 201, created.text
    assert env.client.get("/api/v2/admin/audit-trail", headers=env.headers).status_code == 404  # not a site reader
    env.container.users.set_flags(alice.subject_id, site_auditor=True)
    site = env.client.get("/api/v2/admin/audit-trail", headers=env.headers)
    assert site.status_code == 200, site.text
    actions = [(e["resource"]["action"], e["auth"]["description"]) for e in site.json()["data"]]
    assert ("session.sign-in", "alice") in actions
    assert ("authentication-token.create", "alice") in actions
    # the organization's creation is the site's record (as its deletion), not in its own trail (HCP's 8 events of
    # go-tfe v1.109's TestAuditTrailsList)
    assert ("organization.create", "alice") in actions
    assert "organization.create" not in {e["resource"]["action"] for e in trail(env)}
    token_event = next(e for e in site.json()["data"] if e["resource"]["action"] == "authentication-token.create")
    assert token_event["resource"]["id"] == created.json()["data"]["id"]
    env.container.users.set_flags(alice.subject_id, site_auditor=False)


def test_an_organization_token_reads_hcps_shape_since_a_time(day: tuple[RunEnv, dict[str, Any]]) -> None:
    env, _ = day
    made = env.api("POST", "/organizations/acme/authentication-token", {"data": {"type": "authentication-token"}})
    assert made.status_code == 201, made.text
    headers = {"Authorization": f"Bearer {made.json()['data']['attributes']['token']}"}
    response = env.client.get("/api/v2/organization/audit-trail", headers=headers, params={"page[size]": "2"})
    assert response.status_code == 200, response.text
    body = response.json()
    assert set(body["pagination"]) >= {"current_page", "next_page", "prev_page", "total_pages", "total_count"}
    first = body["data"][0]
    assert {"id", "version", "type", "timestamp", "auth", "request", "resource"} <= set(first)
    assert {"accessor_id", "description", "type", "impersonator_id", "organization_id"} <= set(first["auth"])
    assert {"id", "type", "action", "meta"} <= set(first["resource"]) and len(body["data"]) == 2
    future = {"since": "2999-01-01T00:00:00Z", "until": "2999-02-01T00:00:00Z"}
    later = env.client.get("/api/v2/organization/audit-trail", headers=headers, params=future)
    assert later.status_code == 200 and later.json()["data"] == []
    bad = env.client.get("/api/v2/organization/audit-trail", headers=headers, params={"since": "yesterday"})
    assert bad.status_code == 422 and bad.json()["errors"][0]["source"]["pointer"] == "/since"
    user_token = env.client.get("/api/v2/organization/audit-trail", headers=env.headers)
    assert user_token.status_code == 404


def test_since_is_after_that_time_at_the_precision_given(day: tuple[RunEnv, dict[str, Any]]) -> None:
    """go-tfe sends `since` in whole seconds (RFC 3339): no event of that second, nor of the millisecond a time
    with a fraction names, is "after" it (TestAuditTrailsList's `using since query param`)."""
    env, _ = day
    last = trail(env, **{"page[size]": "100"})[-1]
    whole_second = last["timestamp"][:19] + "Z"  # 2026-01-02T03:04:05Z
    later = trail(env, since=whole_second, **{"page[size]": "100"})
    assert all(e["timestamp"][:19] > whole_second[:19] for e in later), (whole_second, later[:1])
    assert last["id"] not in [e["id"] for e in trail(env, since=last["timestamp"], **{"page[size]": "100"})]
    assert last["id"] in [e["id"] for e in trail(env, since=last["timestamp"][:10], **{"page[size]": "100"})]


def test_owners_filter_by_actor_action_and_resource(day: tuple[RunEnv, dict[str, Any]]) -> None:
    env, made = day
    assert {e["resource"]["action"] for e in trail(env, **{"filter[action]": "workspace."})} >= {
        "workspace.create", "workspace.lock", "workspace.unlock"}  # fmt: skip
    of_run = [e["resource"]["action"] for e in trail(env, **{"filter[resource]": made["run"]})]
    assert of_run == ["run.create", "run.apply"]
    assert trail(env, **{"filter[actor]": "nobody"}) == []


def test_a_failed_write_never_fails_the_action_and_is_counted_and_logged(
    day: tuple[RunEnv, dict[str, Any]], monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    env, _ = day
    store = env.container.audit_store
    before = env.container.audit_recorder.failures

    def failing(event: Any) -> None:
        raise ConditionFailed("the table refused")

    monkeypatch.setattr(store, "append", failing)
    with caplog.at_level(logging.ERROR, logger="terrace.audit"):
        response = env.api("PATCH", f"/workspaces/{env.workspace_id}",
                           {"data": {"type": "workspaces", "attributes": {"description": "still works"}}})  # fmt: skip
    assert response.status_code == 200, response.text
    assert env.container.audit_recorder.failures == before + 1
    assert any(
        "workspace.update" in record.getMessage() for record in caplog.records if record.levelno == logging.ERROR
    )
    monkeypatch.undo()
    alice = env.container.accounts.authenticate(env.headers["Authorization"].split()[1])
    env.container.users.set_flags(alice.subject_id, site_admin=True)
    status = env.client.get("/api/v2/admin/audit-trail/status", headers=env.headers)
    env.container.users.set_flags(alice.subject_id, site_admin=False)
    assert status.status_code == 200 and status.json()["data"]["attributes"]["failed"] == before + 1


def test_a_site_auditor_reads_every_organizations_trail_and_settings_and_changes_nothing(
    day: tuple[RunEnv, dict[str, Any]],
) -> None:
    env, _ = day
    auditor = env.container.accounts.create_user("audrey", "audrey@example.com")
    token = env.container.accounts.issue_token(PrincipalKind.USER, auditor.id).secret
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/vnd.api+json"}
    assert env.client.get("/api/v2/organizations/acme/audit-trail", headers=headers).status_code == 404
    env.container.users.set_flags(auditor.id, site_auditor=True)
    assert env.client.get("/api/v2/organizations/acme/audit-trail", headers=headers).status_code == 200
    assert env.client.get("/api/v2/organizations/acme", headers=headers).status_code == 200
    assert env.client.get("/api/v2/admin/audit-trail", headers=headers).status_code == 200
    refused = [
        env.client.patch("/api/v2/organizations/acme", headers=headers,
                         json={"data": {"type": "organizations", "attributes": {"email": "x@example.com"}}}),
        env.client.post("/api/v2/organizations/acme/workspaces", headers=headers,
                        json={"data": {"type": "workspaces", "attributes": {"name": "nope"}}}),
        env.client.get(f"/api/v2/workspaces/{env.workspace_id}", headers=headers),
        env.client.get(f"/api/v2/workspaces/{env.workspace_id}/vars", headers=headers),
        env.client.get("/api/v2/admin/users", headers=headers),
        env.client.delete("/api/v2/organizations/acme", headers=headers),
    ]  # fmt: skip
    assert [r.status_code for r in refused] == [404] * len(refused), [r.text for r in refused]
    denied = [e for e in trail(env, **{"filter[actor]": "audrey"}) if e["resource"]["outcome"] >= 400]
    assert {e["resource"]["action"] for e in denied} >= {"organization.update", "workspace.create"}


def test_an_organizations_deletion_takes_its_trail(day: tuple[RunEnv, dict[str, Any]]) -> None:
    env = make_run_env("doomed")
    now_us = int(time.time() * 1_000_000)
    window = ("doomed", now_us - 86_400_000_000, now_us + 86_400_000_000, 100)
    assert list(env.container.audit_store.between(*window))
    env.container.purge.organization_contents("doomed")
    assert list(env.container.audit_store.between(*window)) == []


def test_the_ui_page_filters_the_trail_for_owners_only(day: tuple[RunEnv, dict[str, Any]]) -> None:
    env, made = day
    browser = TestClient(create_app(env.container), base_url="https://testserver", follow_redirects=False)
    assert sign_in(browser, env.headers["Authorization"].split()[1]).status_code == 303
    page = browser.get("/app/acme/settings/audit-trail", params={"resource": made["run"]})
    assert page.status_code == 200, page.text
    assert "run.apply" in page.text and "run.create" in page.text and "workspace.lock" not in page.text
    assert "<script>" not in page.text and " style=" not in page.text and " onclick=" not in page.text  # CSP-clean
    assert SECRET not in browser.get("/app/acme/settings/audit-trail").text
    bad = browser.get("/app/acme/settings/audit-trail", params={"since": "soon"})
    assert bad.status_code == 422 and 'role="alert"' in bad.text
    stranger = env.container.accounts.create_user("mallory", "m@example.com")
    token = env.container.accounts.issue_token(PrincipalKind.USER, stranger.id).secret
    other = TestClient(create_app(env.container), base_url="https://testserver", follow_redirects=False)
    assert sign_in(other, token).status_code == 303
    assert other.get("/app/acme/settings/audit-trail").status_code == 404


def test_an_organizations_trail_holds_what_was_done_in_it_the_site_what_was_done_to_it() -> None:
    """go-tfe v1.109's TestAuditTrailsList: an organization created, moved to another plan by a site admin, given an
    organization token, a workspace locked and unlocked three times: its trail has the 8 events HCP's has (the
    token, the workspace, the six locks); its creation and the site admin's change are in the site's trail."""
    env = make_run_env(organization="fresh")
    root = env.container.accounts.create_user("root", "root@example.com", site_admin=True)
    admin = {"Authorization": f"Bearer {env.container.accounts.issue_token(PrincipalKind.USER, root.id).secret}"}
    (business,) = env.client.get("/api/v2/admin/feature-sets?q=Business", headers=admin).json()["data"]
    body = {"data": {"type": "subscription", "relationships": {"feature-set": {"data": business}}}}
    assert env.client.post("/api/v2/admin/organizations/fresh/subscription", json=body, headers=admin).is_success
    made = env.api("POST", "/organizations/fresh/authentication-token", {"data": {"type": "authentication-token"}})
    org_token = {"Authorization": f"Bearer {made.json()['data']['attributes']['token']}"}
    answers = [env.api("POST", f"/workspaces/{env.workspace_id}/actions/{action}", {}) for action in ("lock", "unlock")]
    for action in ("lock", "unlock"):
        path, mine = f"/api/v2/workspaces/{env.workspace_id}/actions/{action}", {"X-Request-Id": f"mine-{action}"}
        answers.append(env.client.post(path, json={}, headers={**env.headers, **mine}))
    answers += [
        env.api("POST", f"/workspaces/{env.workspace_id}/actions/{action}", {}) for action in ("lock", "unlock")
    ]
    assert [a.status_code for a in answers] == [200] * 6
    events = env.client.get("/api/v2/organization/audit-trail", headers=org_token).json()["data"]
    actions = [e["resource"]["action"] for e in events]
    assert actions == ["workspace.create", "authentication-token.create", *["workspace.lock", "workspace.unlock"] * 3]
    # every event names its request: the client's X-Request-Id, else one the answer carries
    assert [e["request"]["id"] for e in events[2:]] == [a.headers["X-Request-Id"] for a in answers]
    assert [e["request"]["id"] for e in events[4:6]] == ["mine-lock", "mine-unlock"] and all(
        e["request"]["id"] for e in events
    )
    env.container.users.set_flags(root.id, site_auditor=True)
    site = [e["resource"]["action"] for e in env.client.get("/api/v2/admin/audit-trail", headers=admin).json()["data"]]
    assert {"organization.create", "subscription.create"} <= set(site)
