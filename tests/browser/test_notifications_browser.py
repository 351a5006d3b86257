"""A workspace's notifications page in chromium: add one (a refused URL first, its error beside the field), see the
verification that enabling it sent among its recent deliveries with the receiver's status code, edit it, disable
it, verify it on demand, delete it. The real app on memory adapters (the outbound port records and answers)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from terrace.adapters.memory_outbound import MemoryOutbound
from terrace.adapters.outbound import OutboundResponse
from terrace.bootstrap import build_memory
from terrace.domain.principal import Principal, PrincipalKind

from .conftest import serve_app, shoot

playwright_api = pytest.importorskip("playwright.sync_api")


@pytest.fixture
def stack(free_port: int) -> Iterator[tuple[str, str, Any]]:
    container = build_memory()
    user = container.accounts.create_user("alice", "alice@example.com")
    principal = Principal(PrincipalKind.USER, user.id, user.username)
    container.organizations.create(principal, "acme", "ops@example.com")
    container.workspaces.create(principal, "acme", {"name": "web"})
    token = container.accounts.issue_token(PrincipalKind.USER, user.id).secret
    with serve_app(container, free_port) as base:
        yield base, token, container


def test_notifications_page(stack: tuple[str, str, Any], page: Any) -> None:
    base, token, container = stack
    outbound = container.outbound
    assert isinstance(outbound, MemoryOutbound)
    expect = playwright_api.expect
    page.goto(f"{base}/app")
    page.get_by_label("API token").fill(token)
    page.keyboard.press("Enter")
    expect(page.get_by_role("heading", name="Organizations")).to_be_visible()
    page.goto(f"{base}/app/acme/workspaces/web")
    page.get_by_role("link", name="Notifications").click()
    expect(page.get_by_text("No notifications yet")).to_be_visible()
    page.get_by_label("Name").fill("deploys")
    page.get_by_label("URL").fill("http://169.254.169.254/latest")
    page.get_by_label("run:completed").check()
    page.get_by_role("button", name="Add notification").click()
    expect(page.locator("#url-error")).to_contain_text("link-local")
    shoot(page, "notifications-error")
    page.get_by_label("URL").fill("https://hooks.example/terrace")
    page.get_by_label("Token (signs webhook payloads)").fill("hook-secret")
    page.get_by_label("Enabled (enabling sends a verification)").check()
    page.get_by_role("button", name="Add notification").click()
    deploys = page.get_by_role("region", name="deploys")
    expect(deploys.get_by_role("cell", name="200 ok")).to_be_visible()  # the verification's answer
    assert [r.url for r in outbound.sent] == ["https://hooks.example/terrace"]
    assert "hook-secret" not in page.content()
    shoot(page, "notifications")
    outbound.answer = lambda url, body: OutboundResponse(503, "busy")
    page.get_by_role("button", name="Verify deploys").click()
    expect(deploys.get_by_role("cell", name="503 failed")).to_be_visible()
    page.get_by_role("button", name="Disable deploys").click()
    expect(page.get_by_role("button", name="Enable deploys")).to_be_visible()
    page.get_by_role("link", name="Edit deploys").click()
    expect(page.get_by_label("run:completed")).to_be_checked()
    page.get_by_label("Name").fill("releases")
    page.get_by_label("run:errored").check()
    page.get_by_role("button", name="Save notification").click()
    expect(page.get_by_text("Triggers: run:completed, run:errored")).to_be_visible()
    [nc] = container.notification_store.of(container.workspaces.find_id("acme", "web"))
    assert nc.name == "releases" and nc.enabled is False and nc.token_ciphertext  # a blank token kept it
    page.get_by_role("button", name="Delete releases").click()
    expect(page.get_by_text("No notifications yet")).to_be_visible()
