"""The web UI in chromium against a local stack whose runners really run terraform 1.0.3: queue a plan
from the UI and watch its log arrive while it runs, confirm the apply, see the new state version and
outputs, diff two versions and roll back, search a resource. Screenshots go to .build/screenshots."""

from __future__ import annotations

import io
import ssl
import tarfile
import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from terrace.domain.principal import PrincipalKind

from .conftest import shoot

playwright_api = pytest.importorskip("playwright.sync_api")
pytestmark = pytest.mark.e2e

CONFIG = """
resource "null_resource" "slow" {
  triggers = {
    t = timestamp()
  }
  provisioner "local-exec" {
    command = "echo provisioning; sleep 6; echo provisioned"
  }
}

resource "null_resource" "fixed" {}

output "greeting" {
  value = "hello from terrace"
}

output "secret" {
  value     = "s3cr3t-output-value"
  sensitive = true
}
"""
DEADLINE_S = 120  # one remote run under load (a run takes ~10 s on an idle machine)


def wait_for(probe: Callable[[], Any], what: str, timeout: float = DEADLINE_S) -> Any:
    deadline = time.monotonic() + timeout
    while not (found := probe()):
        assert time.monotonic() < deadline, f"timed out after {timeout}s waiting for {what}"
        time.sleep(0.25)
    return found


def api_client(stack: Any) -> httpx.Client:
    info = stack.info
    return httpx.Client(
        base_url=info.url,
        verify=ssl.create_default_context(cafile=info.ca_bundle),
        timeout=30,
        headers={"Authorization": f"Bearer {info.token}", "Content-Type": "application/vnd.api+json"},
    )


def upload_configuration(api: httpx.Client, workspace_id: str) -> None:
    """What a CLI does: create a configuration version and PUT the tarball to its upload URL."""
    body = {"data": {"type": "configuration-versions", "attributes": {"auto-queue-runs": False}}}
    r = api.post(f"/api/v2/workspaces/{workspace_id}/configuration-versions", json=body)
    assert r.status_code == 201, r.text
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        data = CONFIG.encode()
        info = tarfile.TarInfo("main.tf")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    put = httpx.put(r.json()["data"]["attributes"]["upload-url"], content=buffer.getvalue(), timeout=30)
    assert put.status_code == 200, put.text
    cv_id = r.json()["data"]["id"]
    wait_for(
        lambda: api.get(f"/api/v2/configuration-versions/{cv_id}").json()["data"]["attributes"]["status"] == "uploaded",
        "the configuration upload",
        timeout=30,
    )


def run_status(api: httpx.Client, run_id: str) -> str:
    return str(api.get(f"/api/v2/runs/{run_id}").json()["data"]["attributes"]["status"])


def queue_and_apply(page: Any, api: httpx.Client, base: str, shot: str) -> str:
    """Queue a plan from the workspace page, watch the logs tail while the phases run, confirm; returns the run id."""
    expect = playwright_api.expect
    page.goto(f"{base}/app/web/workspaces/site")
    page.get_by_role("button", name="Queue plan").click()
    expect(page.locator("#run-status")).to_be_visible()
    run_id = page.url.rsplit("/", 1)[1]
    assert run_id.startswith("run-")
    # The plan log arrives in the open page (htmx polling by offset) while the run is still planning.
    wait_for(lambda: "Terraform" in page.locator("#plan-log").inner_text(), "the plan log to arrive")
    shoot(page, f"{shot}-planning")
    confirm = page.get_by_role("button", name="Confirm & apply")
    expect(confirm).to_be_visible(timeout=DEADLINE_S * 1000)
    expect(page.get_by_label("Resource changes")).to_contain_text("null_resource.slow")
    expect(page.locator("#plan-log")).to_contain_text("Plan: ", timeout=30_000)  # the tail catches up
    shoot(page, f"{shot}-planned")
    confirm.click()
    # The apply log tails while the provisioner sleeps: seen in the page while the API still says applying.
    wait_for(lambda: "provisioning" in page.locator("#apply-log").inner_text(), "the apply log to arrive")
    assert run_status(api, run_id) == "applying"
    shoot(page, f"{shot}-applying")
    expect(page.locator("#run-status")).to_have_text("Applied", timeout=DEADLINE_S * 1000)
    expect(page.locator("#apply-log")).to_contain_text("Apply complete!", timeout=30_000)
    expect(page.get_by_role("button", name="Confirm & apply")).to_have_count(0)
    shoot(page, f"{shot}-applied")
    return run_id


def test_queue_plan_watch_logs_apply_diff_roll_back_and_search(run_stack: Any, page: Any) -> None:
    expect = playwright_api.expect
    base = run_stack.info.url
    api = api_client(run_stack)
    page.goto(f"{base}/app")
    page.get_by_label("API token").fill(run_stack.info.token)
    page.get_by_role("button", name="Sign in").click()
    page.goto(f"{base}/app/web/workspaces/new")
    page.get_by_label("Name").fill("site")
    page.get_by_label("Execution mode").select_option("remote")
    page.get_by_role("button", name="Create workspace").click()
    expect(page.get_by_role("heading", name="site")).to_be_visible()
    ws_id = run_stack.container.workspaces.find_id("web", "site")
    page.get_by_role("link", name="Runs").click()
    expect(page.get_by_text("No runs yet")).to_be_visible()
    # nothing uploaded yet: no plan to queue, and the page says how to upload one
    expect(page.locator("#no-configuration")).to_contain_text("No configuration has been uploaded yet")
    expect(page.get_by_role("button", name="Queue plan")).to_have_count(0)
    shoot(page, "runs-empty")
    upload_configuration(api, ws_id)

    first_run = queue_and_apply(page, api, base, "run-1")
    page.get_by_role("link", name="Overview").click()
    expect(page.get_by_role("cell", name='"hello from terrace"')).to_be_visible()
    assert "s3cr3t-output-value" not in page.content()
    shoot(page, "workspace-applied")

    queue_and_apply(page, api, base, "run-2")  # replaces null_resource.slow: a second state version
    page.get_by_role("link", name="Runs").click()
    expect(page.locator("code", has_text=first_run)).to_be_visible()
    shoot(page, "runs")
    page.get_by_role("link", name="States").click()
    expect(page.get_by_role("cell", name="current")).to_be_visible()
    shoot(page, "states")
    page.get_by_role("button", name="Compare").click()
    expect(page.get_by_role("heading", name="Changed (1)")).to_be_visible()
    diff_url = page.url
    expect(page.get_by_text("null_resource.slow")).to_be_visible()
    expect(page.get_by_role("cell", name="triggers.t")).to_be_visible()
    shoot(page, "state-diff")

    serial_before = run_stack.container.workspaces.load(ws_id).state_serial
    page.get_by_role("link", name="States").click()
    page.get_by_role("row").nth(2).get_by_role("link").first.click()  # the version before the current one
    state_url = page.url
    shoot(page, "state")
    page.get_by_role("link", name="Roll back to this version").click()
    expect(page.get_by_role("heading", name="Roll back to serial")).to_be_visible()
    rollback_url = page.url
    shoot(page, "state-rollback")
    page.get_by_role("button", name="Roll back").click()
    expect(page.get_by_role("heading", name=f"State serial {serial_before + 1}")).to_be_visible()
    restored = run_stack.container.workspaces.load(ws_id)
    assert restored.state_serial == serial_before + 1 and restored.lock is None
    shoot(page, "state-restored")

    def search_finds_it() -> bool:
        page.goto(f"{base}/app/web/workspaces")
        page.get_by_role("link", name="Search resources").click()
        page.get_by_label("Address, ID or ARN").fill("null_resource.fixed")
        page.keyboard.press("Enter")
        page.wait_for_url("**/search?q=null_resource.fixed*")
        return page.get_by_role("link", name="site").count() == 1

    wait_for(search_finds_it, "the resource index", timeout=30)
    shoot(page, "search")
    page.get_by_role("link", name="site").click()
    expect(page.get_by_role("heading", name="site")).to_be_visible()

    page.get_by_role("navigation", name="Workspace").get_by_role("link", name="Settings").click()
    page.get_by_label("Auto-apply (apply a successful plan without confirmation)").check()
    page.get_by_label("Working directory").fill("infra")
    page.get_by_role("button", name="Save settings").click()
    expect(page.get_by_text("Settings saved.")).to_be_visible()
    ws = run_stack.container.workspaces.load(ws_id)
    assert ws.auto_apply and ws.working_directory == "infra"
    shoot(page, "settings")
    api.close()

    # A user without access sees 404 pages, not data: every URL of this workspace, its run and its state.
    stranger = run_stack.container.accounts.create_user("stranger")
    stranger_token = run_stack.container.accounts.issue_token(PrincipalKind.USER, stranger.id).secret
    page.get_by_role("button", name="Sign out").click()
    page.get_by_label("API token").fill(stranger_token)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", name="Organizations")).to_be_visible()
    workspace_url = f"{base}/app/web/workspaces/site"
    urls = [workspace_url, *(workspace_url + tab for tab in ("/runs", "/states", "/variables", "/settings"))]
    urls += [f"{workspace_url}/runs/{first_run}", state_url, f"{state_url}/download", diff_url, rollback_url]
    urls.append(f"{base}/app/web/search?q=null")
    for url in urls:
        response = page.goto(url)
        assert response is not None and response.status == 404, url
        expect(page.get_by_role("heading", name="Not found")).to_be_visible()
        html = page.content()
        for data in ("hello from terrace", "null_resource", "provisioning", ws_id, "Auto-apply", "infra"):
            assert data not in html, (url, data)
    shoot(page, "not-found-stranger")
