"""Variable sets in the web UI through chromium: create a set, add variables (one sensitive), apply it to a
workspace and see the workspace's effective variables with their sources; a sensitive value never reaches the
browser."""

from __future__ import annotations

from typing import Any

import pytest
from terrace.domain.principal import Principal, PrincipalKind

from .conftest import shoot
from .test_web_ui_browser import stack  # noqa: F401  (the fixture: the app on in-memory adapters, served)

playwright_api = pytest.importorskip("playwright.sync_api")


def test_create_a_set_apply_it_and_see_the_effective_variables(stack: tuple[str, str, Any], page: Any) -> None:  # noqa: F811
    base, token, container = stack
    expect = playwright_api.expect
    alice = container.accounts.find_user("alice")
    owner = Principal(PrincipalKind.USER, alice.id, "alice")
    container.workspaces.create(owner, "acme", {"name": "app"})
    page.goto(f"{base}/app")
    page.get_by_label("API token").fill(token)
    page.keyboard.press("Enter")
    page.get_by_role("link", name="acme").click()
    page.get_by_role("link", name="Variable sets").click()
    expect(page.get_by_text("No variable sets yet")).to_be_visible()
    page.get_by_label("Name").fill("cloud creds")
    page.get_by_label("Description").fill("shared credentials")
    page.get_by_role("button", name="Create variable set").click()
    expect(page.get_by_role("heading", name="Variable set cloud creds")).to_be_visible()
    page.get_by_label("Key").fill("region")
    page.get_by_label("Value").fill("eu-north-1")
    page.get_by_role("button", name="Add variable").click()
    expect(page.get_by_role("cell", name="eu-north-1")).to_be_visible()
    page.get_by_label("Key").fill("region")
    page.get_by_label("Value").fill("twice")
    page.get_by_role("button", name="Add variable").click()  # the same key and category again: refused
    expect(page.locator("#key-error")).to_be_visible()
    page.get_by_label("Key").fill("AWS_SECRET_ACCESS_KEY")
    page.get_by_label("Value").fill("s3cr3t-in-a-set")
    page.get_by_label("Category").select_option("env")
    page.get_by_label("Sensitive (write only)").check()
    page.get_by_role("button", name="Add variable").click()
    expect(page.get_by_role("cell", name="AWS_SECRET_ACCESS_KEY", exact=True)).to_be_visible()
    assert "s3cr3t-in-a-set" not in page.content()
    page.get_by_label("Workspace", exact=True).select_option(label="app")
    page.get_by_role("button", name="Apply to workspace").click()
    expect(page.locator("#applied-to").get_by_role("link", name="app")).to_be_visible()
    shoot(page, "varset")
    page.locator("#applied-to").get_by_role("link", name="app").click()
    page.get_by_role("link", name="Variables").click()
    page.get_by_role("link", name="Effective variables, with variable sets").click()
    table = page.locator("#effective-variables")
    expect(table.get_by_role("cell", name="eu-north-1")).to_be_visible()
    expect(table.get_by_role("link", name="cloud creds").first).to_be_visible()
    assert "s3cr3t-in-a-set" not in page.content()
    shoot(page, "effective-variables")
    table.get_by_role("link", name="cloud creds").first.click()
    page.get_by_role("button", name="Remove from workspace app").click()
    expect(page.locator("#applied-to").get_by_role("link", name="app")).to_have_count(0)
    ws_id = container.workspaces.find_id("acme", "app")
    assert [v.key for v in container.effective_variables.all_vars(owner, container.workspaces.load(ws_id))] == []
