"""Auto-destroy in the web UI (chromium via Playwright): an admin schedules a workspace's destroy from its
settings page (a moment, then a period of inactivity), a bad period is refused with the reason, the workspace's
page shows when it will be destroyed, and choosing "Never" clears it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from .conftest import shoot
from .test_web_ui_browser import stack  # noqa: F401  (the fixture: the memory app served by uvicorn)

playwright_api = pytest.importorskip("playwright.sync_api")


def test_schedule_show_and_clear_the_destroy(stack: Any, page: Any) -> None:  # noqa: F811
    base, token, container = stack
    expect = playwright_api.expect
    alice = container.accounts.authenticate(token)
    ws = container.workspaces.create(alice, "acme", {"name": "sandbox"})
    page.goto(f"{base}/app")
    page.get_by_label("API token").fill(token)
    page.keyboard.press("Enter")
    expect(page.get_by_role("heading", name="Organizations")).to_be_visible()

    page.goto(f"{base}/app/acme/workspaces/sandbox/settings")
    expect(page.locator("#auto-destroy-state")).to_contain_text("Not scheduled")
    when = (datetime.now(UTC) + timedelta(days=3)).strftime("%Y-%m-%dT%H:%M")
    page.get_by_label("At a date and time (UTC)").check()
    page.get_by_label("Destroy at (UTC)").fill(when)
    page.get_by_role("button", name="Save auto-destroy").click()
    expect(page.get_by_role("status")).to_have_text("Auto-destroy saved.")
    expect(page.locator("#auto-destroy-state")).to_contain_text(when.replace("T", " "))  # as every page writes a time
    assert container.workspaces.load(ws.id).auto_destroy_at.startswith(when)

    page.get_by_label("After a period without an apply").check()
    page.get_by_label("Inactivity period").fill("2w")
    page.get_by_role("button", name="Save auto-destroy").click()
    expect(page.locator("#auto-destroy-error")).to_contain_text("units d and h")
    page.get_by_label("Inactivity period").fill("3h")
    page.get_by_role("button", name="Save auto-destroy").click()
    expect(page.locator("#auto-destroy-state")).to_contain_text("3h after its last apply")

    page.goto(f"{base}/app/acme/workspaces/sandbox")
    expect(page.locator("#auto-destroy-at")).to_contain_text("3h after its last apply")
    shoot(page, "workspace-auto-destroy")
    page.locator("#auto-destroy-at").get_by_role("link", name="change").click()
    page.get_by_label("Never").check()
    page.get_by_role("button", name="Save auto-destroy").click()
    expect(page.locator("#auto-destroy-state")).to_contain_text("Not scheduled")
    assert container.workspaces.load(ws.id).auto_destroy_at is None
