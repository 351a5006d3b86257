"""A team's first day in the web UI (issue 45), in chromium against the real app (in-memory adapters, the `ui`
fixture of test_web_ui_first_day_browser; a scripted runner): the workspace list and the overview say which
workspace needs a person and follow its current run live; the run's one comment box goes with Confirm & apply
(Discard asks first); the Health tab turns assessments on; the New run form
queues a plan-only run of one target; a policy set's page leads to its policy's code; the
organization token is created and shown once; an owner invites an existing
account on the Members page, which its person accepts. axe-core finds nothing at phone and desktop width on each
page, and the CSP refuses nothing (the `page` fixture). Screenshots: .build/screenshots."""

from __future__ import annotations

from typing import Any

import pytest
from terrace.domain.principal import Principal, PrincipalKind

from .conftest import PHONE, assert_accessible, need_axe, shoot
from .test_web_ui_first_day_browser import DEADLINE_S, UI, ui

playwright_api = pytest.importorskip("playwright.sync_api")
expect = playwright_api.expect
__all__ = ["ui"]  # the fixture
LIVE_MS = DEADLINE_S * 1000
POLL_MS = 15_000  # the longest period the workspace list and the overview poll at (page.clock jumps it)


def test_needs_attention_live_health_and_a_new_run(ui: UI, page: Any) -> None:
    need_axe()
    ws_id = ui.workspace("web")
    ui.workspace("quiet")
    ui.upload_config(ws_id)
    first = ui.create_run(ws_id).json()["data"]["id"]
    page.clock.install()  # time flows, and a poll's wait can be jumped
    ui.sign_in(page)
    page.goto(f"{ui.base}/app/acme/workspaces")
    web = page.get_by_role("row").filter(has=page.get_by_role("link", name="web", exact=True))
    expect(web).to_contain_text("Plan queued")
    expect(page.locator("#needs-attention")).to_have_text("No workspace needs attention.")
    spec = ui.claim()
    body = {"runner_id": "r1", "status": "finished", "has_changes": True, "resource_additions": 2}
    done = ui.runner.post(f"/api/runner/jobs/{spec['job_id']}/finish", json=body)
    assert done.status_code == 200, done.text
    second = ui.create_run(ws_id).json()["data"]["id"]  # the newest run waits behind the first
    assert_accessible(page)  # while the list's next refresh comes
    page.clock.fast_forward(POLL_MS)
    # no reload: the list follows the workspace's current run, and counts it as needing a person
    expect(web.locator(".label-attention")).to_have_text("Needs confirmation", timeout=LIVE_MS)
    expect(web.get_by_role("link", name="Needs confirmation")).to_have_attribute(
        "href", f"/app/acme/workspaces/web/runs/{first}"
    )
    expect(page.locator("#needs-attention")).to_contain_text("1 workspace needs attention", timeout=LIVE_MS)
    shoot(page, "day-one-needs-attention")
    page.locator("#needs-attention").get_by_role("link").click()
    expect(page.get_by_role("link", name="quiet", exact=True)).to_have_count(0)
    page.get_by_role("link", name="web", exact=True).click()
    expect(page.locator("#current-run")).to_contain_text("Needs confirmation")
    assert second not in page.locator("#current-run").inner_html()
    assert_accessible(page)

    page.locator("#current-run").get_by_role("link").first.click()  # the run's one comment box, with its actions
    expect(page.get_by_role("textbox", name="Comment")).to_have_count(1)
    page.get_by_role("textbox", name="Comment").fill("ship it")
    page.once("dialog", lambda dialog: dialog.dismiss())  # Discard asks first (its button's question)
    page.get_by_role("button", name="Discard").click()
    expect(page.get_by_role("button", name="Confirm & apply")).to_be_visible()
    assert ui.container.run_store.load(first).status in ("planned", "cost_estimated")  # not discarded
    page.get_by_role("button", name="Confirm & apply").click()
    expect(page.get_by_role("list", name="Comments")).to_contain_text("ship it", timeout=LIVE_MS)
    assert ui.container.run_store.load(first).status != "discarded"
    assert_accessible(page, (PHONE,))

    page.get_by_role("navigation", name="Workspace").get_by_role("link", name="Overview").click()
    current = page.locator("#current-run")  # the overview follows the current run live too
    expect(current).to_contain_text("Apply queued")
    spec = ui.claim()  # the apply, done: the first run is applied and the second becomes current
    done = ui.runner.post(f"/api/runner/jobs/{spec['job_id']}/finish", json={"runner_id": "r1", "status": "finished"})
    assert done.status_code == 200, done.text
    assert ui.container.run_store.load(first).status == "applied"
    page.clock.fast_forward(POLL_MS)  # the overview's next poll, now rather than in a few seconds
    expect(current.get_by_role("link")).to_have_attribute(
        "href", f"/app/acme/workspaces/web/runs/{second}", timeout=LIVE_MS
    )
    expect(current).not_to_contain_text("Apply queued")

    page.get_by_role("navigation", name="Workspace").get_by_role("link", name="Health").click()
    page.get_by_role("button", name="Turn assessments on").click()
    expect(page.locator("#assessments-state")).to_have_text("On")
    expect(page.get_by_role("button", name="Start an assessment now")).to_be_visible()
    assert_accessible(page, (PHONE,))
    page.get_by_role("navigation", name="Workspace").get_by_role("link", name="Runs").click()  # New run
    page.get_by_label("Plan only").check()
    page.get_by_text("Targets and replacements").click()
    page.get_by_label("Target only these resources").fill("null_resource.a")
    page.get_by_label("Reason for the new run").fill("what would change")
    assert_accessible(page, (PHONE,))
    page.get_by_role("button", name="Queue plan").click()
    expect(page.locator("#run-live")).to_contain_text("plan only")
    run = ui.container.run_store.load(page.url.rsplit("/", 1)[1])
    assert (run.plan_only, run.target_addrs, run.message) == (True, ["null_resource.a"], "what would change")


def test_policy_pages_and_an_invitation_accepted(ui: UI, page: Any) -> None:
    need_axe()
    bob = ui.container.accounts.create_user("bob", "bob@example.com")  # an account an operator made
    bob_token = ui.container.accounts.issue_token(PrincipalKind.USER, bob.id, description="laptop").secret
    owner = Principal(PrincipalKind.USER, ui.container.accounts.find_user("alice").id, "alice")  # type: ignore[union-attr]
    rego = 'package terraform.policies.tagged\n\ndeny contains msg if { false; msg := "x" }\n'
    attrs = {"name": "tagged", "kind": "opa", "query": "data.terraform.policies.tagged.deny",
             "enforcement-level": "advisory"}  # fmt: skip
    policy = ui.container.policies.create_with_content(owner, "acme", attrs, rego)
    ui.container.policy_sets.create(owner, "acme", {"name": "guardrails", "kind": "opa", "global": True},
                                    {"policies": [policy.id]})  # fmt: skip
    ui.sign_in(page)
    page.goto(f"{ui.base}/app/acme/workspaces")
    page.get_by_role("navigation", name="Organization").get_by_role("link", name="Policies").click()
    expect(page.get_by_role("link", name="guardrails")).to_be_visible()  # and nothing wider than a phone
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth"), (
        "the Policies page overflows on a phone"
    )
    assert_accessible(page, (PHONE,))
    page.get_by_role("link", name="guardrails").click()  # the set's page, then its policy's code
    expect(page.locator("#policy-set-scope")).to_have_text("every workspace")
    assert_accessible(page, (PHONE,))
    page.get_by_role("link", name="tagged").click()
    expect(page.locator("#policy-code")).to_contain_text("package terraform.policies.tagged")
    assert_accessible(page, (PHONE,))
    page.get_by_role("navigation", name="Organization").get_by_role("link", name="Settings").click()
    page.get_by_role("link", name="API tokens").click()  # the organization token, shown once
    page.get_by_role("button", name="Create the organization token").click()
    expect(page.locator("#new-token")).to_be_visible()
    assert_accessible(page, (PHONE,))
    page.get_by_role("navigation", name="Organization").get_by_role("link", name="Members").click()
    page.get_by_label("E-mail address").fill("bob@example.com")
    page.get_by_role("button", name="Invite").click()
    expect(page.get_by_role("status")).to_contain_text("Invited bob@example.com")
    invited = page.get_by_role("row").filter(has_text="bob@example.com")
    expect(invited).to_contain_text("Invited")
    expect(invited).to_contain_text("bob")  # bob's own account, not a new one
    assert_accessible(page)
    shoot(page, "day-one-members")
    page.get_by_role("button", name="Sign out").click()

    page.get_by_label("API token").fill(bob_token)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", name="Invitations")).to_be_visible()
    assert_accessible(page)
    shoot(page, "day-one-invitation")
    page.get_by_role("button", name="Accept the invitation to acme").click()
    expect(page.get_by_text("you accepted the invitation")).to_be_visible()
    expect(page.get_by_role("heading", name="acme · Workspaces")).to_be_visible()  # no team yet: no workspace
