"""The run pages in chromium, at phone (375 px) and desktop width: where a run came from and how long each phase
took, why a run waits, raw logs and downloads, the one stable status line and the log that is not announced again,
and a resource's history from the search. The app (in-memory adapters) and its scripted runner are the first-day
tests' `ui` fixture; screenshots go to /tmp/terrace-run-pages."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from .test_web_ui_first_day_browser import DEADLINE_S, UI, expect, ui, wait_for

__all__ = ["ui"]  # the fixture, shared with the first-day tests

SHOTS = Path("/tmp/terrace-run-pages")
PHONE = {"width": 375, "height": 812}
DESKTOP = {"width": 1280, "height": 800}
LIVE_MS = DEADLINE_S * 1000


def shoot(page: Any, name: str) -> None:
    """The page at 375 px (`name-phone.png`) and at desktop width (`name-desktop.png`); the page stays at 375 px.
    At phone width nothing may be wider than the screen."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.set_viewport_size(PHONE)
    overflow = page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
    assert overflow <= 0, f"{name}: the page is {overflow}px wider than a 375px screen"
    page.screenshot(path=str(SHOTS / f"{name}-phone.png"), full_page=True)
    page.set_viewport_size(DESKTOP)
    page.screenshot(path=str(SHOTS / f"{name}-desktop.png"), full_page=True)
    page.set_viewport_size(PHONE)


def cli_run(ui: UI, ws_id: str) -> str:
    """A run created as terraform's `cloud` block creates one (its headers name the client)."""
    body = {"data": {"type": "runs", "attributes": {"message": "from the CLI"},
                     "relationships": {"workspace": {"data": {"type": "workspaces", "id": ws_id}}}}}  # fmt: skip
    headers = {"Terraform-Version": "1.9.8", "X-Terraform-Integration": "cloud"}
    created = ui.api.post("/api/v2/runs", json=body, headers=headers)
    assert created.status_code == 201, created.text
    return str(created.json()["data"]["id"])


def finish(ui: UI, spec: dict[str, Any], **extra: Any) -> None:
    body = {"runner_id": "r1", "status": "finished", **extra}
    done = ui.runner.post(f"/api/runner/jobs/{spec['job_id']}/finish", json=body)
    assert done.status_code == 200, done.text


def test_a_run_says_where_it_came_from_how_long_it_took_and_why_it_waits(ui: UI, page: Any) -> None:
    ws_id = ui.workspace("web")
    ui.upload_config(ws_id)
    first = cli_run(ui, ws_id)
    ui.sign_in(page)
    page.set_viewport_size(PHONE)
    page.goto(f"{ui.base}/app/acme/workspaces/web/runs")
    page.get_by_label("Reason for the new run (optional)").fill("from the browser")
    page.get_by_role("button", name="Queue plan").click()
    second = page.url.rsplit("/", 1)[1]
    expect(page.locator("#run-source")).to_have_text("UI")
    panel = page.get_by_role("region", name="Why is this run waiting?")
    expect(panel).to_contain_text("Position 2 of 2 in the queue of workspace web")
    expect(panel.get_by_role("link", name=first)).to_be_visible()
    expect(panel).to_contain_text("which holds the workspace's lock")
    shoot(page, "run-waiting-behind-a-run")
    panel.get_by_role("link", name=first).click()
    expect(page.locator("#run-source")).to_have_text("CLI")
    expect(page.locator("#run-wait")).to_contain_text("Its plan waits for a runner of this organization: position 1")
    spec = ui.claim()  # the page polls: the runner appears without a reload
    expect(page.locator("#run-wait")).to_contain_text("Runner r1", timeout=LIVE_MS)
    expect(page.get_by_role("heading", name="Who works this run?")).to_be_visible()
    durations = page.get_by_role("definition").filter(has_text="(so far)")
    expect(durations).to_have_count(1)
    shoot(page, "run-claimed-by-a-runner")
    finish(ui, spec, has_changes=False)  # nothing to apply: the run ends, the next one goes to the runners
    expect(page.locator("#run-status")).to_have_text("No changes", timeout=LIVE_MS)
    expect(page.locator("#run-wait")).to_have_count(0)
    times = page.locator("#run-durations")
    expect(times.locator("dt").filter(has_text="Planning")).to_have_count(1)
    expect(times).not_to_contain_text("(so far)")
    page.goto(f"{ui.base}/app/acme/workspaces/web/runs/{second}")
    expect(page.locator("#run-wait")).to_contain_text("Its plan waits for a runner of this organization")
    page.goto(f"{ui.base}/app/acme/workspaces/web/runs")
    expect(page.locator(f"tr:has(a[href$='{first}']) .run-meta")).to_contain_text("CLI · ")
    expect(page.locator(f"tr:has(a[href$='{second}']) .run-meta")).to_contain_text("UI · ")
    shoot(page, "runs-list-source-and-time")


def test_raw_logs_and_downloads(ui: UI, page: Any) -> None:
    ws_id = ui.workspace("web")
    ui.upload_config(ws_id)
    run_id = cli_run(ui, ws_id)
    spec = ui.claim()
    log = b"\x1b[1mInitializing...\x1b[0m\r\n" + b"".join(b"\x1b[32m+\x1b[0m line %d\n" % i for i in range(300))
    assert ui.runner.put(f"/api/runner/jobs/{spec['job_id']}/logs?offset=0", content=log).status_code == 204
    plan = {"format_version": "1.2", "resource_changes": [{"address": "null_resource.a",
                                                          "change": {"actions": ["create"]}}]}  # fmt: skip
    ui.container.blobs.put(
        spec["plan_json_upload_url"].split("memory://blobs/")[1].split("?")[0], json.dumps(plan).encode()
    )
    finish(ui, spec, has_changes=True, resource_additions=1)
    ui.sign_in(page)
    page.set_viewport_size(PHONE)
    page.goto(f"{ui.base}/app/acme/workspaces/web/runs/{run_id}")
    expect(page.get_by_role("link", name="Download plan JSON")).to_be_visible()
    shoot(page, "run-downloads")
    with page.expect_download() as saved:
        page.get_by_role("link", name="Download plan JSON").click()
    assert saved.value.suggested_filename == f"{run_id}-plan.json"
    assert json.loads(Path(saved.value.path()).read_text()) == plan
    with page.expect_download() as saved_log:
        page.get_by_role("link", name="Download plan log").click()
    assert saved_log.value.suggested_filename == f"{run_id}-plan.log"
    text = Path(saved_log.value.path()).read_text()
    assert text.startswith("Initializing...\n+ line 0\n") and "\x1b" not in text and "\r" not in text
    page.get_by_role("link", name="Raw plan log").click()
    body = page.locator("body")
    expect(body).to_contain_text("+ line 299")
    assert page.evaluate("document.contentType") == "text/plain"
    assert "\x1b" not in body.inner_text() and "[32m" not in body.inner_text()
    shoot(page, "run-raw-log")


def test_the_status_line_is_stable_and_the_log_is_not_announced_again(ui: UI, page: Any) -> None:
    ws_id = ui.workspace("web")
    ui.upload_config(ws_id)
    run_id = cli_run(ui, ws_id)
    ui.sign_in(page)
    page.set_viewport_size(PHONE)
    page.goto(f"{ui.base}/app/acme/workspaces/web/runs/{run_id}")
    line = page.get_by_role("status").filter(has_text="Run status:")
    expect(line).to_have_text("Run status: Plan queued")
    assert page.locator("[aria-live]").count() == 1  # the status line, and nothing the polls replace
    assert page.locator("#run-live").get_attribute("aria-live") is None
    page.evaluate(
        """() => {
          window.statusLine = document.getElementById('run-status-line');
          window.logNode = document.getElementById('plan-log');
          window.statusTexts = [];
          new MutationObserver(() => window.statusTexts.push(window.statusLine.textContent))
            .observe(window.statusLine, {childList: true, characterData: true, subtree: true});
          window.announced = [];  // text the log's live region would read out: what is added and not aria-hidden
          new MutationObserver((records) => records.forEach((r) => r.addedNodes.forEach((n) => {
            const el = n.nodeType === 1 ? n : n.parentElement;
            const text = n.textContent.trim();
            if (text && !(el && el.closest('[aria-hidden=true]'))) window.announced.push(text);
          }))).observe(window.logNode, {childList: true, subtree: true});
          window.swaps = 0;
          document.body.addEventListener('htmx:afterSwap', (e) => {
            if (e.detail.target && e.detail.target.id === 'run-live') window.swaps += 1; });
        }"""
    )
    wait_for(lambda: page.evaluate("window.swaps") >= 2, "two swaps of the live header")
    spec = ui.claim()
    expect(line).to_have_text("Run status: Planning", timeout=LIVE_MS)
    lines = b"".join(b"plan line %d\n" % i for i in range(5))
    assert ui.runner.put(f"/api/runner/jobs/{spec['job_id']}/logs?offset=0", content=lines).status_code == 204
    expect(page.locator("#plan-log")).to_contain_text("plan line 4", timeout=LIVE_MS)
    wait_for(lambda: page.evaluate("window.swaps") >= 5, "more swaps of the live header")
    finish(ui, spec, has_changes=True, resource_additions=1)
    expect(line).to_have_text("Run status: Needs confirmation", timeout=LIVE_MS)
    assert page.evaluate("window.statusLine === document.getElementById('run-status-line')")
    assert page.evaluate("window.logNode === document.getElementById('plan-log')")
    assert page.evaluate("window.statusTexts") == ["Run status: Planning", "Run status: Needs confirmation"]
    announced = page.evaluate("window.announced")
    assert "".join(announced).count("plan line 4") == 1 and not any("Waiting" in a for a in announced), announced
    # keyboard focus: a ring of the CSS's focus colour, fields with their 3:1 border
    page.get_by_role("textbox", name="Comment", exact=True).focus()
    page.keyboard.press("Tab")
    ring = page.evaluate("getComputedStyle(document.activeElement).outlineColor")
    assert page.evaluate("document.activeElement.id") == "run-action-apply" and ring == "rgb(194, 78, 0)"
    border = page.get_by_role("textbox", name="Comment", exact=True).evaluate(
        "el => getComputedStyle(el).borderTopColor"
    )
    assert border == "rgb(110, 119, 129)"
    shoot(page, "run-status-line-and-focus")


def push_state(ui: UI, serial: int, resources: list[dict[str, Any]]) -> None:
    doc = {"version": 4, "terraform_version": "1.9.8", "serial": serial, "lineage": "history", "outputs": {},
           "resources": resources}  # fmt: skip
    pushed = ui.api.post("/state/v1/acme/web", content=json.dumps(doc), auth=("alice", ui.token))
    assert pushed.status_code == 200, pushed.text
    published = ui.container.publisher.events  # type: ignore[attr-defined]
    while published:  # the events worker's part: index the state
        ui.container.events.handle(published.pop(0))


def bucket(name: str, acl: str) -> dict[str, Any]:
    return {"mode": "managed", "type": "aws_s3_bucket", "name": name,
            "provider": 'provider["registry.terraform.io/hashicorp/aws"]',
            "instances": [{"schema_version": 0, "attributes": {"id": f"{name}-bucket", "acl": acl,
                                                               "arn": f"arn:aws:s3:::{name}-bucket"}}]}  # fmt: skip


def test_a_resources_history_from_the_search(ui: UI, page: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    ui.workspace("web")
    for serial, acl in enumerate(("private", "private", "public-read", "public-read", "private"), start=1):
        push_state(ui, serial, [bucket("logs", acl), bucket(f"other{serial}", "private")])
    monkeypatch.setattr("terrace.services.state.resource_history.PAGE", 3)  # a page compares 3 versions
    ui.sign_in(page)
    page.set_viewport_size(PHONE)
    page.goto(f"{ui.base}/app/acme/search?q=logs-bucket")
    page.get_by_role("link", name="aws_s3_bucket.logs").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("History of aws_s3_bucket.logs")
    entries = page.locator("section.history-entry")
    expect(entries).to_have_count(2)  # serial 5 and 3 changed its acl; serial 4 did not
    expect(entries.nth(0).get_by_role("heading")).to_have_text("Changed in serial 5")
    expect(entries.nth(0).get_by_role("row").filter(has_text="acl")).to_contain_text('"public-read"')
    expect(entries.nth(1).get_by_role("heading")).to_have_text("Changed in serial 3")
    expect(page.locator("main")).not_to_contain_text("other4")  # its own changes only
    shoot(page, "resource-history")
    page.get_by_role("link", name="Older versions").click()
    expect(entries).to_have_count(1)
    expect(entries.nth(0).get_by_role("heading")).to_have_text("Added in serial 1")
    expect(page.get_by_role("link", name="Older versions")).to_have_count(0)
    shoot(page, "resource-history-older")
