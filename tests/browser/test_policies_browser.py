"""Policy as code in chromium against a local stack whose runners really run terraform: create an OPA policy
(a broken one is refused with the engine's message) and an overridable policy set from the UI, queue a plan, see
the run stop at its policy stage with the failed rule's message, override it, confirm the apply."""

from __future__ import annotations

import time
from typing import Any

import pytest

from .conftest import shoot
from .test_web_ui_runs_browser import DEADLINE_S, api_client, run_status, upload_configuration

playwright_api = pytest.importorskip("playwright.sync_api")
pytestmark = pytest.mark.e2e

REGO = """package terraform.policies.no_null
import rego.v1

deny contains msg if {
    some rc in input.plan.resource_changes
    rc.type == "null_resource"
    msg := sprintf("%s: null resources need a review", [rc.address])
}
"""


def test_policies_from_the_ui_stop_a_run_until_overridden(run_stack: Any, page: Any) -> None:
    expect = playwright_api.expect
    base = run_stack.info.url
    api = api_client(run_stack)
    created = api.post("/api/v2/organizations/web/workspaces", json={"data": {"type": "workspaces", "attributes": {
        "name": "guarded", "execution-mode": "remote"}}})  # fmt: skip
    assert created.status_code == 201, created.text
    ws_id = created.json()["data"]["id"]
    page.goto(f"{base}/app")
    page.get_by_label("API token").fill(run_stack.info.token)
    page.get_by_role("button", name="Sign in").click()
    page.goto(f"{base}/app/web/workspaces")
    page.get_by_role("link", name="Policies").click()
    expect(page.get_by_role("heading", name="Policies", level=1)).to_be_visible()

    page.get_by_label("Name", exact=True).first.fill("no_null")
    page.get_by_label("Enforcement", exact=True).select_option("mandatory")
    page.get_by_label("Rego", exact=True).fill(
        "package terraform.policies.no_null\ndeny contains msg if {\n msg :=\n}\n"
    )
    page.get_by_role("button", name="Create policy", exact=True).click()
    expect(page.get_by_role("alert")).to_contain_text("does not compile")
    expect(page.get_by_role("alert")).to_contain_text("Invalid assignment")
    shoot(page, "policies-refused")
    expect(page.get_by_label("Enforcement", exact=True)).to_have_value("mandatory")  # the form is kept
    page.get_by_label("Rego", exact=True).fill(REGO)
    page.get_by_role("button", name="Create policy", exact=True).click()
    expect(page.get_by_role("cell", name="data.terraform.policies.no_null.deny")).to_be_visible()

    page.locator("#set-name").fill("guard")
    page.get_by_label("Workspaces (names, comma-separated)").fill("guarded")
    page.get_by_label("Mandatory failures may be overridden").check()
    page.get_by_role("button", name="Create policy set").click()
    expect(page.locator("#policy-sets")).to_contain_text("guard")
    shoot(page, "policies")

    upload_configuration(api, ws_id)
    page.goto(f"{base}/app/web/workspaces/guarded/runs")
    page.get_by_role("button", name="Queue plan").click()
    run_id = page.url.rsplit("/", 1)[1]
    deadline = time.monotonic() + DEADLINE_S
    while (status := run_status(api, run_id)) != "post_plan_awaiting_decision":
        assert status not in ("errored", "post_plan_completed") and time.monotonic() < deadline, status
        time.sleep(0.25)
    page.reload()
    section = page.locator("#run-policies")
    expect(section).to_contain_text("no_null")
    expect(section).to_contain_text("null_resource.slow: null resources need a review")
    expect(section.locator("#policy-status")).to_have_text("failed")
    shoot(page, "run-policy-failed")
    page.get_by_label("Reason").fill("reviewed by the platform team")
    page.get_by_role("button", name="Override and continue").click()
    confirm = page.get_by_role("button", name="Confirm & apply")
    expect(confirm).to_be_visible(timeout=DEADLINE_S * 1000)
    expect(page.locator("#run-policies #policy-status")).to_have_text("overridden")
    shoot(page, "run-policy-overridden")
    confirm.click()
    expect(page.locator("#run-status")).to_have_text("Applied", timeout=DEADLINE_S * 1000)
    api.close()
