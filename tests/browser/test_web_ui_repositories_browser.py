"""Issue 45's pages of what comes from a repository, walked in chromium over one app (in-memory adapters, served
once for the file; each test its own organization): a policy set's version uploaded through the API on its set's
page and a set whose versions come from a repository; a registry module published from a repository, a workspace's
Version control and change requests, the audit trail and the explorer. axe-core on every page at phone and desktop
width, and the CSP refuses nothing (the `page` fixture). The rest of issue 45's walk:
`test_web_ui_issue45_browser.py`."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from .conftest import assert_accessible, need_axe
from .ui_site import Site, from_repositories, serve_site, versioned_sets

playwright_api = pytest.importorskip("playwright.sync_api")
expect = playwright_api.expect


@pytest.fixture(scope="module")
def site() -> Iterator[Site]:
    with serve_site(("zeta", "eta")) as served:
        yield served


def test_a_policy_set_s_versions_and_the_repository_they_come_from(site: Site, page: Any) -> None:
    """A version uploaded through the API, listed with its status and policies on its set's page; a set whose
    versions come from a repository names it. axe-core at phone and desktop width."""
    need_axe()
    uploaded, from_repo, version_id = versioned_sets(site)
    site.sign_in(page)
    page.goto(f"{site.base}/app/zeta/policy-sets/{uploaded}")
    version = page.get_by_role("region", name=f"Version {version_id}")
    expect(version.get_by_role("heading")).to_have_text(f"{version_id} current ready")
    expect(version.locator(".label-done")).to_have_text(["current", "ready"])  # green, as a passed check
    expect(version).to_contain_text("tfe-api")
    expect(version.get_by_role("listitem")).to_have_text(["no_null (mandatory): data.terraform.policies.no_null.deny"])
    assert_accessible(page)
    page.goto(f"{site.base}/app/zeta/policy-sets/{from_repo}")
    expect(page.locator("#vcs-source")).to_contain_text("Versions from octo/policies · branch main · policies/")
    expect(page.locator(".policy-set-version .label-done")).to_have_text(["current", "ready"])
    assert_accessible(page)


def test_a_module_and_a_workspace_from_repositories_the_audit_trail_and_the_explorer(site: Site, page: Any) -> None:
    """The pages added with repositories (a module's, a workspace's Version control), a workspace's change
    requests, the audit trail and the explorer: axe-core at phone and desktop width on each."""
    need_axe()
    from_repositories(site)
    site.sign_in(page)
    page.goto(f"{site.base}/app/eta/registry/net/aws")
    expect(page.locator("#vcs-source")).to_contain_text("Published from octo/terraform-aws-net · branch main")
    expect(page.locator("#usage")).to_contain_text('version = "0.1.0"')  # scrolls sideways on a phone
    assert_accessible(page)
    page.goto(f"{site.base}/app/eta/workspaces/infra/settings/version-control")
    expect(page.get_by_text("Connected repository")).to_be_visible()
    assert_accessible(page)
    page.goto(f"{site.base}/app/eta/workspaces/infra")
    expect(page.locator("#change-requests")).to_contain_text("Pin the provider")
    assert_accessible(page)
    page.goto(f"{site.base}/app/eta/settings/audit-trail")
    expect(page.get_by_role("table", name="Audit events, newest first").locator("tbody tr").first).to_be_visible()
    assert_accessible(page)
    page.goto(f"{site.base}/app/eta/explorer")
    expect(page.get_by_role("heading", name="Explorer", level=1)).to_be_visible()
    assert_accessible(page)
