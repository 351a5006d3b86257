"""What HCP Terraform users look for in the UI (issue 24), in chromium against the real app (in-memory adapters,
the `ui` fixture of test_web_ui_first_day_browser): the workspace list that says what needs attention, an errored
run's errors above its log, a large plan grouped and collapsed, a new workspace's `cloud` block, the skip link and
breadcrumb. Screenshots at phone and desktop width go to .build/screenshots."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from .conftest import shoot
from .test_web_ui_first_day_browser import UI, ui, wait_for

playwright_api = pytest.importorskip("playwright.sync_api")
expect = playwright_api.expect
__all__ = ["ui"]  # the fixture


def work_plan(ui: UI, ws_id: str, status: str, log: bytes = b"planning\n") -> str:
    """A run of `ws_id` whose plan the runner worked to `status` (finished with changes, or errored)."""
    run_id = str(ui.create_run(ws_id).json()["data"]["id"])
    spec = ui.claim()
    assert ui.runner.put(f"/api/runner/jobs/{spec['job_id']}/logs?offset=0", content=log).status_code == 204
    finish = {"runner_id": "r1", "status": status, "has_changes": True, "resource_additions": 1}
    if status == "errored":
        finish["error_message"] = "terraform plan exited with status 1"
    assert ui.runner.post(f"/api/runner/jobs/{spec['job_id']}/finish", json=finish).status_code == 200
    return run_id


def test_the_workspace_list_shows_what_needs_attention(ui: UI, page: Any) -> None:
    web, db, cache = ui.workspace("web"), ui.workspace("db"), ui.workspace("cache")
    for ws_id in (web, db):
        ui.upload_config(ws_id)
    work_plan(ui, web, "finished")  # awaits confirmation (and its run holds the lock)
    work_plan(ui, db, "errored")
    tagged = {"data": [{"type": "tags", "attributes": {"name": "prod"}}]}
    assert ui.api.post(f"/api/v2/workspaces/{db}/relationships/tags", json=tagged).status_code == 204
    lock = ui.api.post(f"/api/v2/workspaces/{cache}/actions/lock", json={"reason": "migration"})
    assert lock.status_code == 200, lock.text

    ui.sign_in(page)
    page.goto(f"{ui.base}/app/acme/workspaces")
    rows = {name: page.get_by_role("row").filter(has=page.get_by_role("link", name=name, exact=True))
            for name in ("web", "db", "cache")}  # fmt: skip
    expect(rows["web"].locator(".label-attention")).to_have_text("Needs confirmation")
    expect(rows["db"].locator(".label-errored")).to_have_text("Errored")
    expect(rows["cache"]).to_contain_text("No runs yet")
    expect(rows["cache"].locator(".locked")).to_have_text("Locked")
    expect(rows["web"].locator(".locked")).to_have_text("Locked")  # its run holds the lock
    expect(rows["db"].locator(".locked")).to_have_count(0)  # only when locked
    shoot(page, "first-day-workspace-list")
    page.set_viewport_size({"width": 1280, "height": 800})
    expect(rows["db"].locator("time")).to_have_text(re.compile(r"just now|\d+ min ago"))
    page.get_by_label("Status").select_option("attention")
    page.get_by_role("button", name="Filter").click()
    expect(page.get_by_role("link", name="web", exact=True)).to_be_visible()
    expect(page.get_by_role("link", name="db", exact=True)).to_have_count(0)
    page.goto(f"{ui.base}/app/acme/workspaces")
    page.get_by_role("link", name="prod").click()  # a tag is a filter
    expect(page.get_by_role("link", name="db", exact=True)).to_be_visible()
    expect(page.get_by_role("link", name="web", exact=True)).to_have_count(0)
    assert page.url.endswith("/app/acme/workspaces?tag=prod")


ERRORED_LOG = (
    "Terrace runner r1 · job plan · terraform 1.0.3\n"
    "Initializing the backend...\n"
    "\x1b[31m╷\x1b[0m\x1b[0m\n"
    "\x1b[31m│\x1b[0m \x1b[0m\x1b[1m\x1b[31mError: \x1b[0m\x1b[0m\x1b[1mReference to undeclared resource\x1b[0m\n"
    "\x1b[31m│\x1b[0m \x1b[0m\n"
    '\x1b[31m│\x1b[0m \x1b[0m  on main.tf line 3, in output "x":\n'
    "\x1b[31m│\x1b[0m \x1b[0m   3:   value = null_resource.nope.id\n"
    "\x1b[31m╵\x1b[0m\x1b[0m\n"
).encode()


def test_an_errored_run_shows_its_errors_above_the_log(ui: UI, page: Any) -> None:
    ws_id = ui.workspace("web")
    ui.upload_config(ws_id)
    run_id = work_plan(ui, ws_id, "errored", log=ERRORED_LOG + b"".join(b"noise %d\n" % i for i in range(300)))
    ui.sign_in(page)
    page.goto(f"{ui.base}/app/acme/workspaces/web/runs/{run_id}")
    summary = page.get_by_role("region", name="1 error")
    expect(summary.locator("pre")).to_have_text(
        'Error: Reference to undeclared resource\n\n  on main.tf line 3, in output "x":\n'
        "   3:   value = null_resource.nope.id"
    )
    expect(summary).not_to_contain_text("Terrace runner")  # the runner's banner stays out of the summary
    above = "([a, b]) => !!(a.compareDocumentPosition(b) & Node.DOCUMENT_POSITION_FOLLOWING)"
    assert page.evaluate(above, [summary.element_handle(), page.locator("#plan-log").element_handle()])
    shoot(page, "first-day-run-errored")


def test_a_new_workspace_says_how_to_use_it_and_pages_have_a_skip_link_and_breadcrumb(ui: UI, page: Any) -> None:
    ui.workspace("web")
    ui.sign_in(page)
    page.goto(f"{ui.base}/app/acme/workspaces/web")
    block = page.locator("#cloud-block")
    expect(block).to_contain_text('hostname     = "localhost:8443"')  # the public URL's host and its port
    expect(block).to_contain_text('organization = "acme"')
    expect(block).to_contain_text('name = "web"')
    expect(page.get_by_text("export SSL_CERT_FILE=")).to_be_visible()
    expect(page.get_by_role("navigation", name="Breadcrumb").get_by_role("link", name="acme")).to_be_visible()
    page.keyboard.press("Tab")  # the first stop of the keyboard: the skip link, visible when focused
    skip = page.get_by_role("link", name="Skip to content")
    expect(skip).to_be_focused()
    expect(skip).to_be_in_viewport()
    shoot(page, "first-day-first-use")
    page.keyboard.press("Enter")
    assert page.evaluate("document.activeElement.id") == "main"


def test_a_large_plan_is_grouped_by_action_collapsed_and_stays_as_the_reader_left_it(ui: UI, page: Any) -> None:
    ws_id = ui.workspace("web")
    ui.upload_config(ws_id)
    run_id = ui.create_run(ws_id).json()["data"]["id"]
    spec = ui.claim()
    changes = [{"address": f"null_resource.new[{i}]", "change": {"actions": ["create"]}} for i in range(40)]
    changes += [{"address": "null_resource.old", "change": {"actions": ["delete"]}}]
    key = spec["plan_json_upload_url"].split("memory://blobs/")[1].split("?")[0]
    ui.container.blobs.put(key, json.dumps({"resource_changes": changes}).encode())
    finish = {"runner_id": "r1", "status": "finished", "has_changes": True, "resource_additions": 40}
    assert ui.runner.post(f"/api/runner/jobs/{spec['job_id']}/finish", json=finish | {"resource_destructions": 1})
    ui.sign_in(page)
    page.goto(f"{ui.base}/app/acme/workspaces/web/runs/{run_id}")
    additions = page.locator("#changes-create")
    expect(additions.locator("summary")).to_have_text("40 to add")
    expect(page.locator("#changes-delete summary")).to_have_text("1 to destroy")
    expect(additions.get_by_text("null_resource.new[0]")).to_be_hidden()  # a large plan starts collapsed
    page.evaluate(
        """() => { window.liveSwaps = 0;
           document.body.addEventListener('htmx:afterSettle', (e) => {
             if (e.detail.target && e.detail.target.id === 'run-live') window.liveSwaps += 1; }); }"""
    )
    additions.locator("summary").click()
    expect(additions.get_by_text("null_resource.new[39]")).to_be_visible()
    wait_for(lambda: page.evaluate("window.liveSwaps") >= 1, "a swap of the live header")
    expect(page.locator("#changes-create").get_by_text("null_resource.new[39]")).to_be_visible()  # still open
    shoot(page, "first-day-large-plan")
