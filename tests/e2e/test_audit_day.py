"""The audit trail's done-when: a day of actions on the embedded dev stack, over real HTTP (a UI sign-in and
sign-out, API calls, Terraform 1.0.3 doing a remote apply whose run writes the state, a state pull, a refused
lock), reads back from the trail through the API complete, in order, with who (user or run, token id), from
where and how it ended, and with no variable value."""

from __future__ import annotations

import re
import ssl
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from conftest import Api, StackInfo
from e2e_runs import RUN_TIMEOUT_S, current_state, remote_dir, remote_workspace, runs

pytestmark = pytest.mark.e2e
SECRET = "s3cret-value-never-in-the-trail"
BODY = 'variable "password" {}\nresource "null_resource" "a" {}\noutput "length" { value = length(var.password) }\n'


def _csrf(html: str) -> str:
    found = re.search(r'name="csrf_token" value="([^"]+)"', html)
    assert found, "no CSRF field on the page"
    return found.group(1)


def _browser_day(stack: StackInfo) -> None:
    """Sign in to the web UI with the stack's token, then sign out."""
    context = ssl.create_default_context(cafile=stack.ca_bundle)
    with httpx.Client(base_url=stack.url, verify=context, timeout=30, follow_redirects=False) as browser:
        page = browser.get("/app/sign-in")
        signed_in = browser.post("/app/sign-in", data={"token": stack.token, "csrf_token": _csrf(page.text)})
        assert signed_in.status_code == 303, signed_in.text
        home = browser.get(f"/app/{stack.organization}/workspaces")
        assert home.status_code == 200, home.text
        assert browser.post("/app/sign-out", data={"csrf_token": _csrf(home.text)}).status_code == 303


def _trail(api: Api, path: str, since: str) -> list[dict[str, Any]]:
    response = api.http.get(path, params={"since": since, "page[size]": "100"})
    assert response.status_code == 200, response.text
    return list(response.json()["data"])


def test_a_day_of_actions_reads_back_complete_and_in_order(run_stack, run_api, run_terraform, unique):
    since = datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")
    _browser_day(run_stack)
    name = unique("audit")
    ws_id = remote_workspace(run_api, name)
    var = {"data": {"type": "vars", "attributes": {"key": "password", "value": SECRET, "category": "terraform",
                                                   "sensitive": True}}}  # fmt: skip
    run_api.request("POST", f"/api/v2/workspaces/{ws_id}/vars", var, expect=201)
    run_api.lock(ws_id)
    refused = run_api.request("POST", f"/api/v2/workspaces/{ws_id}/actions/lock", {}, expect=409)
    assert refused.status_code == 409
    run_api.unlock(ws_id)
    tf = remote_dir(run_stack, run_terraform, name, BODY)
    applied = tf.run("apply", "-auto-approve", "-input=false", "-no-color", timeout=RUN_TIMEOUT_S)
    assert "Apply complete! Resources: 1 added" in applied.output
    (run,) = runs(run_api, ws_id)
    sv_id = run_api.current_state_version(ws_id)["id"]
    assert current_state(run_api, ws_id)["resources"] == {"null_resource.a": 1}
    assert '"null_resource"' in tf.run("state", "pull", timeout=RUN_TIMEOUT_S).stdout  # the user reads the state

    org = run_stack.organization
    events = _trail(run_api, f"/api/v2/organizations/{org}/audit-trail", since)
    mine = [e for e in events if e["resource"]["id"] in (ws_id, run["id"], sv_id) or e["resource"]["type"] in (
        "variable", "configuration-version", "state-version")]  # fmt: skip
    assert {e["auth"]["kind"] for e in events} <= {"user", "run", "runner"}, events
    said = [(e["resource"]["action"], e["auth"]["kind"], e["resource"]["outcome"]) for e in mine]
    expected = [
        ("workspace.create", "user", 201),
        ("variable.create", "user", 201),
        ("workspace.lock", "user", 200),
        ("workspace.lock", "user", 409),  # a refused attempt is recorded with how it ended
        ("workspace.unlock", "user", 200),
        ("configuration-version.create", "user", 201),
        ("run.create", "user", 201),
        ("workspace.lock", "run", 200),  # the run's terraform locks its workspace through the API
        ("run.apply", "user", 202),  # -auto-approve confirms it
        ("state-version.create", "run", 201),  # the run's own token wrote the state
        ("workspace.unlock", "run", 200),
        ("state-version.read", "user", None),  # `terraform state pull`
    ]
    at = 0
    for action, kind, outcome in said:  # the expected events, in this order, among the trail's
        want = expected[at] if at < len(expected) else None
        if want and (action, kind) == want[:2] and (want[2] is None or outcome == want[2]):
            at += 1
    assert at == len(expected), f"missing {expected[at:]} in {said}"
    assert [e["timestamp"] for e in events] == sorted(e["timestamp"] for e in events)
    for event in mine:
        assert event["auth"]["token_id"] and event["auth"]["accessor_id"], event
        assert event["auth"]["organization_id"] == org and event["request"]["source"] == "127.0.0.1", event
    run_write = next(e for e in mine if e["resource"]["action"] == "state-version.create")
    assert run_write["auth"]["accessor_id"] == run["id"]
    site = _trail(run_api, "/api/v2/admin/audit-trail", since)
    assert [e["resource"]["action"] for e in site if e["resource"]["type"] == "session"][-2:] == [
        "session.sign-in", "session.sign-out"]  # fmt: skip
    assert SECRET not in str(events) + str(site) and run_stack.token not in str(events) + str(site)
