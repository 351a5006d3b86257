"""The explorer page in chromium over the real app (in-memory adapters, summaries as the explorer feed records
them): from the organization's navigation, "which workspaces use module vpc below 5.0.0" and "which run terraform
1.3" in a few clicks, a sortable column, the CSV link, at phone width (the page itself never scrolls sideways)
and desktop width, with nothing the Content-Security-Policy refuses (the `page` fixture's check)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from terrace.bootstrap import build_memory
from terrace.domain.explorer import Use
from terrace.domain.principal import Principal, PrincipalKind

from .conftest import serve_app, shoot

playwright_api = pytest.importorskip("playwright.sync_api")
VPC = "terraform-aws-modules/vpc/aws"


@pytest.fixture
def stack(free_port: int) -> Iterator[tuple[str, str]]:
    container = build_memory()
    alice = container.accounts.create_user("alice", "alice@example.com")
    owner = Principal(PrincipalKind.USER, alice.id, alice.username)
    container.organizations.create(owner, "acme", "ops@example.com")
    for name, terraform, vpc in (("net-old", "1.3.9", "3.19.0"), ("net-new", "1.9.5", "5.1.2"),
                                 ("legacy", "1.3.2", "4.0.2")):  # fmt: skip
        ws = container.workspaces.create(owner, "acme", {"name": name, "terraform-version": terraform})
        aws = Use("aws", "hashicorp/aws", vpc.replace("3.19.0", "4.67.0").replace("5.1.2", "5.31.0"), "~> 4.0")
        container.explorer_store.record_configuration(ws.organization, ws.id, f"cv-{name}", (Use("vpc", VPC, vpc),),
                                                      (aws,))  # fmt: skip
    sandbox = container.workspaces.create(owner, "acme", {"name": "sandbox", "terraform-version": "1.9.5"})
    unpinned = Use("aws", "hashicorp/aws", "5.31.0")  # its lock file chose 5.31.0; its configuration pins nothing
    container.explorer_store.record_configuration(sandbox.organization, sandbox.id, "cv-sandbox", (), (unpinned,))
    token = container.accounts.issue_token(PrincipalKind.USER, alice.id).secret
    with serve_app(container, free_port) as base:
        yield base, token


def test_the_explorer_answers_module_and_terraform_version_questions(stack: Any, page: Any) -> None:
    expect = playwright_api.expect
    base, token = stack
    page.goto(f"{base}/app")
    page.get_by_label("API token").fill(token)
    page.get_by_role("button", name="Sign in").click()
    page.goto(f"{base}/app/acme/workspaces")
    page.get_by_role("link", name="Explorer", exact=True).click()
    expect(page.get_by_role("heading", name="Explorer", exact=True)).to_be_visible()
    expect(page.get_by_role("navigation", name="Organization").get_by_role("link", name="Explorer")).to_have_attribute(
        "aria-current", "page")  # fmt: skip

    page.get_by_label("Show").select_option("modules")
    page.get_by_role("button", name="Explore").click()  # the module view's fields in the filter rows
    page.get_by_label("Field 1").select_option("source")
    page.get_by_label("Condition 1").select_option("contains")
    page.get_by_label("Value 1").fill("vpc")
    page.get_by_label("Field 2").select_option("version")
    page.get_by_label("Condition 2").select_option("lt")
    page.get_by_label("Value 2").fill("5.0.0")
    page.get_by_role("button", name="Explore").click()
    rows = page.locator("#explorer-rows tbody tr")
    expect(rows).to_have_count(2)
    expect(page.locator("#explorer-rows")).to_contain_text("net-old")
    expect(page.locator("#explorer-rows")).not_to_contain_text("net-new")
    page.get_by_role("link", name="version", exact=True).click()  # sort by version, then descending
    expect(page.locator("th[aria-sort=ascending]")).to_have_text("version")
    expect(rows.first).to_contain_text("3.19.0")
    page.get_by_role("link", name="version", exact=True).click()
    expect(page.locator("th[aria-sort=descending]")).to_have_text("version")
    expect(rows.first).to_contain_text("4.0.2")
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")  # the table scrolls, not the page
    shoot(page, "explorer-modules")

    csv = page.request.get(base + page.get_by_role("link", name="Download CSV").get_attribute("href"))
    assert csv.ok and csv.headers["content-type"].startswith("text/csv")
    lines = csv.text().strip().splitlines()
    assert lines[0] == "name,source,version,registry_type,workspace_count,workspaces" and len(lines) == 3

    page.get_by_role("link", name="workspaces on terraform 1.3").click()
    expect(rows).to_have_count(2)
    expect(page.locator("#explorer-rows")).to_contain_text("legacy")
    expect(page.locator("#explorer-rows")).to_contain_text("net-old")
    page.get_by_label("Value 1").fill("")
    page.get_by_label("Field 1").select_option("resource_count")
    page.get_by_label("Condition 1").select_option("gt")
    page.get_by_label("Value 1").fill("many")
    page.get_by_role("button", name="Explore").click()
    expect(page.get_by_role("alert")).to_contain_text("not a number")
    shoot(page, "explorer-workspaces-error")

    page.get_by_role("link", name="unpinned providers (no version constraint)").click()
    expect(rows).to_have_count(1)
    expect(page.locator("#explorer-rows")).to_contain_text("sandbox")
    expect(page.locator("#explorer-rows")).not_to_contain_text("net-old")


def test_a_change_request_from_the_explorer_shows_on_its_workspaces_until_archived(stack: Any, page: Any) -> None:
    """The workspaces on terraform 1.3, then a change request on each from the explorer's form; each workspace's
    page shows it, and archiving it there takes it off that workspace only."""
    expect = playwright_api.expect
    base, token = stack
    page.goto(f"{base}/app")
    page.get_by_label("API token").fill(token)
    page.get_by_role("button", name="Sign in").click()
    page.goto(f"{base}/app/acme/explorer")
    page.get_by_role("link", name="workspaces on terraform 1.3").click()
    expect(page.locator("#explorer-rows tbody tr")).to_have_count(2)
    page.get_by_label("Subject").fill("Leave terraform 1.3")
    page.get_by_label("Message").fill("1.3 is out of support.")
    page.get_by_role("button", name="Request this change on 2 workspaces").click()
    expect(page.locator("#change-request-made")).to_have_text("Change request made on 2 workspaces.")
    expect(page.locator("#explorer-rows tbody tr")).to_have_count(2)  # the same query, shown again
    shoot(page, "explorer-change-request")

    page.goto(f"{base}/app/acme/workspaces/legacy")
    expect(page.locator("#change-requests")).to_contain_text("Leave terraform 1.3")
    page.get_by_role("button", name="Archive change request: Leave terraform 1.3").click()
    expect(page.get_by_text("Leave terraform 1.3")).to_have_count(0)
    page.goto(f"{base}/app/acme/workspaces/net-old")
    expect(page.locator("#change-requests")).to_contain_text("Leave terraform 1.3")
    page.goto(f"{base}/app/acme/workspaces/net-new")
    expect(page.locator("#change-requests")).to_have_count(0)
