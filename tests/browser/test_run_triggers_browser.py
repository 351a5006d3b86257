"""Run triggers in the web UI (chromium via Playwright): the workspace settings page lists its source workspaces
(a section htmx loads), adds one from a select, removes it, and saves `auto-apply-run-trigger`; the page of a run
a trigger queued names the run that queued it and links to it."""

from __future__ import annotations

import io
import tarfile
from typing import Any

import pytest
from terrace.domain.principal import Principal
from terrace.domain.run_triggers import Origin
from terrace.services.events import landed_event

from .conftest import shoot
from .test_web_ui_browser import stack  # noqa: F401  (the fixture: the memory app served by uvicorn)

playwright_api = pytest.importorskip("playwright.sync_api")


def _uploaded(container: Any, principal: Principal, ws: Any) -> Any:
    cv = container.configuration_versions.create(principal, ws, {"auto-queue-runs": False})
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        data = b'output "x" { value = 1 }'
        info = tarfile.TarInfo("main.tf")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    container.blobs.put(cv.blob_key, buffer.getvalue())
    container.events.handle(landed_event(cv.blob_key))
    return container.configuration_versions.get(principal, cv.id)


def test_sources_on_the_settings_page_and_the_run_that_queued_a_run(stack: Any, page: Any) -> None:  # noqa: F811
    base, token, container = stack
    expect = playwright_api.expect
    alice = container.accounts.authenticate(token)
    up = container.workspaces.create(alice, "acme", {"name": "up"})
    down = container.workspaces.create(alice, "acme", {"name": "down"})
    source_run = container.runs.create(alice, up, {"message": "network change"}, _uploaded(container, alice, up).id)
    trigger = container.run_triggers.create(alice, down.id, up.id).trigger
    origin = Origin(trigger.id, source_run.id, up.id, "up", (up.id,))
    triggered = container.runs.queue_triggered(down, _uploaded(container, alice, down), origin, "alice")
    container.run_triggers.delete(alice, trigger.id)

    page.goto(f"{base}/app")
    page.get_by_label("API token").fill(token)
    page.keyboard.press("Enter")
    expect(page.get_by_role("heading", name="Organizations")).to_be_visible()
    page.goto(f"{base}/app/acme/workspaces/down/settings")
    section = page.locator("#run-triggers")
    expect(section.get_by_text("No source workspaces.")).to_be_visible()  # loaded by htmx into the page
    section.get_by_label("Source workspace").select_option(label="up")
    section.get_by_role("button", name="Add source").click()
    expect(page.get_by_role("status")).to_have_text("Settings saved.")
    expect(page.locator("#run-triggers").get_by_role("link", name="up")).to_be_visible()
    assert [v.sourceable.name for v in container.run_triggers.list(alice, down.id, "inbound")] == ["up"]
    shoot(page, "workspace-settings-run-triggers")

    page.get_by_label("Auto-apply runs queued by run triggers").check()
    page.get_by_role("button", name="Save settings").click()
    expect(page.get_by_role("status")).to_have_text("Settings saved.")
    assert container.workspaces.load(down.id).auto_apply_run_trigger is True

    page.locator("#run-triggers").get_by_role("button", name="Remove source up").click()
    expect(page.locator("#run-triggers").get_by_text("No source workspaces.")).to_be_visible()
    assert container.run_triggers.list(alice, down.id, "inbound") == []

    page.goto(f"{base}/app/acme/workspaces/down/runs/{triggered.id}")
    notice = page.locator("#run-trigger")
    expect(notice).to_contain_text("Queued by a run trigger")
    expect(notice).to_contain_text("workspace up")
    shoot(page, "run-queued-by-run-trigger")
    notice.get_by_role("link", name=source_run.id).click()
    expect(page.get_by_role("heading", name="network change")).to_be_visible()
    assert page.url.endswith(f"/app/acme/workspaces/up/runs/{source_run.id}")
