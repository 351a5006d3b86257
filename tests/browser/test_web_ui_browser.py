"""The web UI in Debian's chromium via Playwright: sign in, create a workspace, lock it, CSRF-protected sign-out.

Serves the real app (in-memory adapters) with uvicorn on localhost, where chromium keeps Secure cookies.
Screenshots of each page go to .build/screenshots.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlencode

import pytest
from terrace.bootstrap import build_memory
from terrace.domain.principal import Principal, PrincipalKind

from .conftest import serve_app, shoot

playwright_api = pytest.importorskip("playwright.sync_api")


@pytest.fixture
def stack(free_port: int) -> Iterator[tuple[str, str, Any]]:
    container = build_memory()
    user = container.accounts.create_user("alice", "alice@example.com")
    container.organizations.create(Principal(PrincipalKind.USER, user.id, user.username), "acme", "ops@example.com")
    token = container.accounts.issue_token(PrincipalKind.USER, user.id).secret
    with serve_app(container, free_port) as base:
        yield base, token, container


def test_sign_in_create_workspace_lock_and_sign_out(stack: tuple[str, str, Any], page: Any) -> None:
    base, token, container = stack
    expect = playwright_api.expect
    page.goto(f"{base}/app")
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    shoot(page, "sign-in")
    page.get_by_label("API token").fill("wrong")
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("alert")).to_be_visible()
    page.get_by_label("API token").fill(token)
    page.keyboard.press("Enter")
    expect(page.get_by_role("heading", name="Organizations")).to_be_visible()
    shoot(page, "organizations")
    page.get_by_role("link", name="acme").click()
    expect(page.get_by_text("No workspaces yet")).to_be_visible()
    shoot(page, "workspaces-empty")
    page.get_by_role("link", name="New workspace").click()
    page.get_by_label("Name").fill("web prod!")
    page.get_by_role("button", name="Create workspace").click()
    expect(page.get_by_role("alert")).to_be_visible()
    shoot(page, "workspace-new-error")
    page.get_by_label("Name").fill("web-prod")
    page.get_by_label("Tags (comma-separated)").fill("web, prod")
    page.get_by_role("button", name="Create workspace").click()
    expect(page.get_by_role("heading", name="web-prod")).to_be_visible()
    assert container.workspaces.find_id("acme", "web-prod")
    page.get_by_role("button", name="Lock workspace").click()
    expect(page.get_by_role("button", name="Unlock workspace")).to_be_visible()
    shoot(page, "workspace")
    page.get_by_role("link", name="Variables").click()
    page.get_by_label("Key").fill("region")
    page.get_by_label("Value").fill("eu-west-1")
    page.get_by_role("button", name="Add variable").click()
    expect(page.get_by_role("cell", name="eu-west-1")).to_be_visible()
    page.get_by_label("Key").fill("db_password")
    page.get_by_label("Value").fill("hunter2-secret")
    page.get_by_label("Sensitive (write only)").check()
    page.get_by_role("button", name="Add variable").click()
    expect(page.get_by_role("cell", name="db_password", exact=True)).to_be_visible()
    assert "hunter2-secret" not in page.content()
    shoot(page, "variables")
    page.get_by_label("Key").click()
    page.keyboard.press("Shift+Tab")  # keyboard focus moves back to the last row's Delete button: visibly
    focused = page.evaluate(
        "[document.activeElement.textContent, getComputedStyle(document.activeElement).outlineStyle]"
    )
    assert focused == ["Delete", "solid"], focused
    shoot(page, "variables-keyboard-focus")
    page.get_by_role("link", name="Edit region").click()
    expect(page.get_by_label("Value")).to_have_value("eu-west-1")
    page.get_by_label("Value").fill("eu-central-1")
    page.get_by_label("Description").fill("where it runs")
    page.get_by_role("button", name="Save variable").click()
    expect(page.get_by_role("cell", name="eu-central-1")).to_be_visible()
    page.get_by_role("link", name="Edit db_password").click()
    expect(page.get_by_label("Value")).to_have_value("")  # write-only: never sent to the browser
    page.get_by_label("Key").fill("k" * 129)  # past the 128 characters of a key
    page.get_by_role("button", name="Save variable").click()
    expect(page.locator("#key-error")).to_be_visible()
    shoot(page, "variable-edit-error")
    page.get_by_label("Key").fill("db_password")
    page.get_by_label("Description").fill("kept secret")
    page.get_by_role("button", name="Save variable").click()
    expect(page.get_by_text("kept secret")).to_be_visible()
    ws_id = container.workspaces.find_id("acme", "web-prod")
    assert container.variables.sensitive_values(ws_id).values == ("hunter2-secret",)  # blank value kept it
    assert "hunter2-secret" not in page.content()
    shoot(page, "variables-edited")
    page.get_by_role("link", name="acme").first.click()
    expect(page.get_by_role("link", name="web-prod")).to_be_visible()
    shoot(page, "workspaces")
    page.get_by_role("link", name="alice · Tokens").click()
    page.get_by_label("Description").fill("laptop")
    page.get_by_role("button", name="Create token").click()
    secret = page.locator("#new-token").inner_text()
    assert container.accounts.authenticate(secret).username == "alice"
    shoot(page, "tokens")
    page.once("dialog", lambda dialog: dialog.accept())  # revoking asks first
    page.get_by_role("button", name="Revoke laptop").click()
    expect(page.get_by_role("button", name="Revoke laptop")).to_have_count(0)
    page.goto(f"{base}/app/nobody/workspaces")
    expect(page.get_by_role("heading", name="Not found")).to_be_visible()
    shoot(page, "not-found")
    page.goto(f"{base}/app/acme/workspaces/web-prod/settings")  # its checkboxes' labels once had inline styles
    expect(page.get_by_role("heading", name="Settings")).to_be_visible()
    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    page.goto(f"{base}/app")
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()


INJECTED = '<img src="/nothing" onerror="window.ran = 1">'


def test_the_csp_refuses_inline_code_and_the_check_sees_it(stack: tuple[str, str, Any], page: Any) -> None:
    """The control of the CSP check every browser test ends with: an inline handler put in a page is refused."""
    base, _, _ = stack
    page.goto(f"{base}/app/sign-in")
    playwright_api.expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    assert page.csp_violations == []
    with page.expect_console_message(lambda message: "Content Security Policy" in message.text):
        page.evaluate("html => document.body.insertAdjacentHTML('beforeend', html)", INJECTED)
    assert page.evaluate("window.ran") is None and page.csp_violations
    page.csp_violations.clear()  # seen and expected: the fixture's own check passes


def test_terraform_login_approval_reaches_the_clis_listener(stack: tuple[str, str, Any], page: Any) -> None:
    """The approval redirects the browser to the CLI's listener on localhost: the CSP's form-action allows it."""
    base, token, _ = stack
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    query = urlencode(
        {
            "client_id": "terraform-cli",
            "response_type": "code",
            "redirect_uri": "http://localhost:10003/login",
            "code_challenge": challenge,
            "code_challenge_method": "S256",
            "state": "st-browser",
        }
    )
    page.goto(f"{base}/app/oauth/authorize?{query}")
    page.get_by_label("API token").fill(token)
    page.get_by_role("button", name="Sign in").click()
    playwright_api.expect(page.get_by_role("button", name="Approve")).to_be_visible()
    # nothing listens there: the browser's request to it is what counts, refused connection or not
    with page.expect_request(lambda request: request.url.startswith("http://localhost:10003/login?")) as sent:
        page.get_by_role("button", name="Approve").click(no_wait_after=True)
    assert "state=st-browser" in sent.value.url and "code=" in sent.value.url
