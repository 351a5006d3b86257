"""Agent pools in the web UI (chromium via Playwright): create a pool, issue a token (its secret shown once), see the
agent that registered with it (status, last ping), revoke the token; pick the pool in a workspace's settings."""

from __future__ import annotations

from typing import Any

import pytest

from .conftest import shoot
from .test_web_ui_browser import stack  # noqa: F401  (the fixture: the memory app served by uvicorn)

playwright_api = pytest.importorskip("playwright.sync_api")


def test_pools_tokens_agents_and_the_workspace_setting(stack: Any, page: Any) -> None:  # noqa: F811
    base, token, container = stack
    expect = playwright_api.expect
    alice = container.accounts.authenticate(token)
    container.workspaces.create(alice, "acme", {"name": "private-net"})

    page.goto(f"{base}/app")
    page.get_by_label("API token").fill(token)
    page.keyboard.press("Enter")
    expect(page.get_by_role("heading", name="Organizations")).to_be_visible()
    page.goto(f"{base}/app/acme/agent-pools")
    expect(page.get_by_text("No agent pools.")).to_be_visible()
    page.get_by_label("Name").fill("datacenter")
    page.get_by_role("button", name="Create pool").click()
    expect(page.get_by_role("heading", name="datacenter")).to_be_visible()
    page.get_by_label("Token description").fill("rack-7")
    page.get_by_role("button", name="Create token for datacenter").click()
    secret = page.locator("#new-agent-token").inner_text()
    (pool,) = container.agent_pools.list(alice, "acme")
    agent = container.agents.register(container.accounts.authenticate(secret), "rack-7-vm", "10.1.2.3")
    page.reload()
    expect(page.locator("#new-agent-token")).to_have_count(0)  # shown once
    row = page.get_by_role("row", name="rack-7-vm")
    expect(row).to_contain_text("idle")
    expect(row).to_contain_text("10.1.2.3")
    shoot(page, "agent-pools")

    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Revoke rack-7").click()
    expect(page.get_by_text("No tokens.")).to_be_visible()
    assert container.agent_pools.tokens(alice, pool.id) == []
    assert agent.pool_id == pool.id

    page.goto(f"{base}/app/acme/workspaces/private-net/settings")
    page.get_by_label("Execution mode").select_option("agent")
    page.get_by_label("Agent pool").select_option(label="datacenter")
    page.get_by_role("button", name="Save settings").click()
    expect(page.get_by_role("status")).to_have_text("Settings saved.")
    ws = container.workspaces.load(container.workspaces.find_id("acme", "private-net"))
    assert (ws.execution_mode, ws.agent_pool_id) == ("agent", pool.id)
