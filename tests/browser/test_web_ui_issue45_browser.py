"""Issue 45's items that had no browser test, walked in chromium over one app (in-memory adapters, served once for
the file; each test its own organization, so the order does not matter) with a scripted runner: the one status
model after a policy (the list, the count, the overview, the run page), a speculative plan's changes, each policy
evaluation named by its set with a coloured badge beside Override, the `run:needs_attention` notification and
Verify's answer; projects in the workspace flow, the overview's facts, locking with a reason, the New run dialog,
team tokens and the organization navigation on workspace pages; the Health tab's drift and failing checks, a
registry module's typed inputs and sanitized README, an editable set variable, counts in the right number,
invitations cancelled and declined, the favicon; a phone-width pass over the workspace pages. (A policy set's
versions, what comes from a repository, the audit trail and the explorer: `test_web_ui_repositories_browser.py`.)
Desktop width, axe-core on every page (the phone pass at phone width), and the CSP refuses nothing (the `page`
fixture). acme's policy is compiled and evaluated once for the file (the `guarded` fixture)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest
from terrace.local.usage import usage

from .conftest import DESKTOP, PHONE, assert_accessible, need_axe
from .ui_site import HEALTH_PLAN, Guarded, Site, acme, gamma, planner, serve_site

playwright_api = pytest.importorskip("playwright.sync_api")
expect = playwright_api.expect
ORGS = ("acme", "beta", "gamma", "delta", "epsilon")
TIME = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$")  # every page's way of writing a time (`when`)


@pytest.fixture(scope="module")
def site() -> Iterator[Site]:
    with serve_site(ORGS) as served:
        yield served


@pytest.fixture(scope="module")
def guarded(site: Site) -> Guarded:
    """acme's run waiting for a policy override (its policy compiled and evaluated once for the file)."""
    return acme(site)


def row(page: Any, name: str) -> Any:
    return page.get_by_role("row").filter(has=page.get_by_role("link", name=name, exact=True))


def ws_tab(page: Any, name: str) -> Any:
    return page.get_by_role("navigation", name="Workspace").get_by_role("link", name=name, exact=True)


def test_a_policy_override_needs_a_person_everywhere_and_notifies(site: Site, guarded: Guarded, page: Any) -> None:
    need_axe()
    page.set_viewport_size(DESKTOP)
    site.sign_in(page)
    page.goto(f"{site.base}/app/acme/workspaces")
    expect(row(page, "guarded").locator(".label-attention")).to_have_text("Needs policy override")
    expect(row(page, "preview")).to_contain_text("Planned (2 to add)")  # a speculative plan with changes
    expect(page.locator("#needs-attention")).to_contain_text("1 workspace needs attention")
    assert_accessible(page, (DESKTOP,))
    page.get_by_role("link", name="guarded", exact=True).click()
    expect(page.locator("#current-run")).to_contain_text("Needs policy override")
    assert_accessible(page, (DESKTOP,))
    ws_tab(page, "Runs").click()
    expect(row(page, "from the CLI")).to_contain_text("Needs policy override")
    assert_accessible(page, (DESKTOP,))
    row(page, "from the CLI").get_by_role("link", name="from the CLI").click()
    expect(page.locator("#run-status")).to_have_text("Needs policy override")
    results = page.locator("#run-policies")  # each evaluation named by its set and policy, beside Override
    expect(results.get_by_role("heading", name="Policy set guardrails")).to_be_visible()
    outcome = results.locator(".policy-outcomes li").filter(has_text="tagged")
    expect(outcome).to_contain_text("tagged (mandatory)")
    expect(outcome.locator(".policy-message")).to_have_text(["null_resource.a: needs a tag"])
    badge = outcome.locator(".label-errored")  # a failure reads red, not plain text
    expect(badge).to_have_text("failed")
    assert badge.evaluate("el => getComputedStyle(el).backgroundColor") == "rgb(253, 236, 234)"
    expect(page.get_by_role("button", name="Override and continue")).to_be_visible()
    assert_accessible(page, (DESKTOP,))

    ws_tab(page, "Notifications").click()  # the override awaited was told, and each delivery's time reads alike
    section = page.get_by_role("region", name="hook")
    expect(section.locator("tbody tr")).to_have_count(2)  # the verification, then run:needs_attention
    expect(section.locator("tbody time").first).to_have_text(TIME)
    assert b'"run:needs_attention"' in guarded.outbound.sent[-1].body
    page.get_by_role("button", name="Verify hook").click()
    expect(page.locator("#verify-result")).to_have_text("Verification sent: 200 ok.")
    for trigger in ("assessment:drifted", "assessment:failed", "workspace:auto_destroy_reminder"):
        expect(page.get_by_label(trigger, exact=True)).to_be_visible()  # the form offers every trigger
    assert_accessible(page, (DESKTOP,))

    page.get_by_role("navigation", name="Organization").get_by_role("link", name="Policies").click()
    page.get_by_role("link", name="guardrails").click()  # the set's page: its scope, policies and parameters
    expect(page.locator("#policy-set-scope")).to_contain_text("guarded")
    expect(page.locator("#set-policies").get_by_role("link", name="tagged")).to_be_visible()
    expect(page.locator("#set-parameters").get_by_role("row").filter(has_text="max_size")).to_contain_text("3")
    assert_accessible(page, (DESKTOP,))


def test_projects_the_overview_and_the_organization_navigation(site: Site, page: Any) -> None:
    need_axe()
    page.set_viewport_size(DESKTOP)
    c = site.container
    c.projects.create(site.owner, "beta", {"name": "platform"})
    team = c.teams.create(site.owner, "beta", {"name": "devs"})
    default = next(p for p in c.projects.list(site.owner, "beta") if p.is_default)
    grant = {"data": {"type": "team-projects", "attributes": {"access": "maintain"},
                      "relationships": {"team": {"data": {"type": "teams", "id": team.id}},
                                        "project": {"data": {"type": "projects", "id": default.id}}}}}  # fmt: skip
    assert site.api.post("/api/v2/team-projects", json=grant).status_code == 201
    site.workspace("beta", "legacy")
    pool = site.api.post("/api/v2/organizations/beta/agent-pools",
                         json={"data": {"type": "agent-pools", "attributes": {"name": "edge"}}})  # fmt: skip
    assert pool.status_code == 201, pool.text
    site.sign_in(page)

    page.goto(f"{site.base}/app/beta/workspaces/new")  # a project picker at creation
    page.get_by_label("Name").fill("api")
    page.get_by_label("Project", exact=True).select_option(label="platform")
    assert_accessible(page, (DESKTOP,))
    page.get_by_role("button", name="Create workspace").click()
    expect(page.locator("#ws-project")).to_have_text("platform")
    api_id = str(c.workspaces.find_id("beta", "api"))
    pool_id = pool.json()["data"]["id"]
    patch = {"data": {"type": "workspaces", "attributes": {"description": "The public API", "execution-mode": "agent",
                                                           "agent-pool-id": pool_id}}}  # fmt: skip
    assert site.api.patch(f"/api/v2/workspaces/{api_id}", json=patch).status_code == 200
    tags = {"data": [{"type": "tags", "attributes": {"name": "prod"}}]}
    assert site.api.post(f"/api/v2/workspaces/{api_id}/relationships/tags", json=tags).status_code == 204
    page.reload()  # the overview: id, description, tags, project, execution mode and agent pool
    expect(page.locator("#ws-id")).to_have_text(api_id)
    expect(page.locator("#ws-description")).to_have_text("The public API")
    expect(page.locator("#ws-tags")).to_have_text("prod")
    facts = page.locator("dl.facts")
    expect(facts).to_contain_text("agent (agent pool")
    expect(facts).to_contain_text(pool_id)
    page.get_by_label("Reason for locking").fill("migrating the database")
    page.get_by_role("button", name="Lock workspace").click()
    expect(page.locator("#lock-state")).to_contain_text("migrating the database")
    organization = page.get_by_role("navigation", name="Organization")  # the same navigation as the org pages
    expect(organization.get_by_role("link", name="Explorer")).to_be_visible()
    assert_accessible(page, (DESKTOP,))
    organization.get_by_role("link", name="Registry").click()
    expect(page.get_by_role("heading", name="Private registry", level=1)).to_be_visible()
    assert_accessible(page, (DESKTOP,))

    page.goto(f"{site.base}/app/beta/workspaces")  # the list's project filter
    page.get_by_label("Project", exact=True).select_option(label="platform")
    page.get_by_role("button", name="Filter").click()
    expect(page.get_by_role("link", name="api", exact=True)).to_be_visible()
    expect(page.get_by_role("link", name="legacy", exact=True)).to_have_count(0)
    assert_accessible(page, (DESKTOP,))
    page.get_by_role("link", name="api", exact=True).click()
    ws_tab(page, "Settings").click()  # move to project
    assert_accessible(page, (DESKTOP,))
    page.get_by_label("Move to project").select_option(label="Default Project")
    page.get_by_role("button", name="Move workspace").click()
    expect(page.get_by_text("Workspace moved.")).to_be_visible()
    assert c.workspaces.load(api_id).project_id == default.id
    ws_tab(page, "Team access").click()  # what the project gives, shown on the workspace's page
    inherited = page.locator("#inherited-access")
    expect(inherited.get_by_role("link", name="devs")).to_be_visible()
    expect(inherited).to_contain_text("maintain")
    assert_accessible(page, (DESKTOP,))


def test_a_new_run_of_each_kind_and_team_tokens(site: Site, page: Any) -> None:
    need_axe()
    page.set_viewport_size(DESKTOP)
    c = site.container
    c.teams.create(site.owner, "epsilon", {"name": "devs"})
    legacy = site.workspace("epsilon", "legacy")
    info: Any = SimpleNamespace(url=site.base, organization="epsilon", ca_bundle="/ca.pem", cli_config="/cli.tfrc",
                                hostname="localhost", registry_hostname="r.localhost", token=site.token)  # fmt: skip
    banner = usage(info, "/dev.json")  # what `make dev` prints: the UI's address, and the token that signs in
    address = re.search(r"Web UI: (\S+)", banner)
    token = re.search(r"signs in to the web UI\): (\S+)", banner)
    assert address and token, banner
    page.goto(address.group(1))
    page.get_by_label("API token").fill(token.group(1))
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("link", name="epsilon")).to_be_visible()
    page.goto(f"{site.base}/app/epsilon/workspaces/legacy/runs")  # no configuration: nothing to queue
    expect(page.locator("#no-configuration")).to_be_visible()
    expect(page.get_by_role("button", name="Queue plan")).to_have_count(0)
    assert_accessible(page, (DESKTOP,))
    site.upload_config(legacy)
    page.reload()  # the New run dialog: its run types, targets and replacements, a message
    for kind in ("Plan and apply", "Plan only", "Refresh only", "Destroy"):
        expect(page.get_by_label(kind, exact=True)).to_be_visible()
    page.get_by_label("Refresh only").check()
    page.get_by_text("Targets and replacements").click()
    page.get_by_label("Replace these resources (addresses, one a line)").fill("null_resource.b")
    page.get_by_label("Reason for the new run (optional)").fill("refresh the state")
    assert_accessible(page, (DESKTOP,))
    page.get_by_role("button", name="Queue plan").click()
    expect(page.locator("#run-status")).to_be_visible()
    made = c.run_store.load(page.url.rsplit("/", 1)[1])
    assert (made.refresh_only, made.replace_addrs, made.message) == (True, ["null_resource.b"], "refresh the state")
    site.sign_in(page, planner(site, legacy))  # someone who may only plan is told who confirms
    page.goto(f"{site.base}/app/epsilon/workspaces/legacy/runs")
    expect(page.locator("#apply-by-others")).to_contain_text("waits for someone who may apply")
    assert_accessible(page, (DESKTOP,))
    site.sign_in(page)

    page.goto(f"{site.base}/app/epsilon/settings/tokens")  # a team token, made and shown once
    page.get_by_label("Team", exact=True).select_option(label="devs")
    page.get_by_label("Description").fill("CI deploys")
    page.get_by_role("button", name="Create team token").click()
    secret = page.locator("#new-token").inner_text()
    assert c.accounts.authenticate(secret) is not None
    expect(page.get_by_role("row").filter(has_text="CI deploys")).to_contain_text("devs")
    assert_accessible(page, (DESKTOP,))


def test_health_a_module_a_set_variable_and_invitations(site: Site, page: Any) -> None:
    need_axe()
    page.set_viewport_size(DESKTOP)
    set_id, bob_token = gamma(site)
    site.sign_in(page)

    page.goto(f"{site.base}/app/gamma/workspaces/site/health")  # on, an assessment now, its drift and checks
    page.get_by_role("button", name="Turn assessments on").click()
    expect(page.locator("#assessments-state")).to_have_text("On")
    page.get_by_role("button", name="Start an assessment now").click()
    expect(page.get_by_role("status")).to_contain_text("An assessment was started")
    site.work("gamma", plan=HEALTH_PLAN)
    page.reload()
    expect(page.locator("#last-assessment time")).to_have_text(TIME)
    expect(page.locator("#drift-summary")).to_contain_text("1 drifted")
    drifted = page.get_by_role("region", name="aws_s3_bucket.logs")
    expect(drifted.get_by_role("row").filter(has_text="acl")).to_contain_text('"private""public-read"')
    expect(page.locator(".failing-checks")).to_contain_text("check.health")
    expect(page.locator(".failing-checks .check-message")).to_have_text("the endpoint answered 503")
    assert_accessible(page, (DESKTOP,))

    page.goto(f"{site.base}/app/gamma/registry/vpc/aws")  # typed inputs and defaults, the README sanitized
    inputs = page.locator("#inputs")
    expect(inputs).to_contain_text("map(string)")
    expect(inputs).to_contain_text('{"env": "dev"}')
    readme = page.locator("#readme")
    expect(readme.get_by_role("heading", name="VPC")).to_be_visible()
    expect(readme.locator("em")).to_have_text("network")
    expect(readme.locator("script")).to_have_count(0)
    expect(readme).to_contain_text("<script>alert(1)</script>")  # raw HTML shown as text
    assert_accessible(page, (DESKTOP,))

    page.goto(f"{site.base}/app/gamma/varsets/{set_id}")  # counts in the right number; a set variable edited
    expect(page.get_by_text("Applies to 1 workspace and 0 projects.")).to_be_visible()
    page.get_by_role("link", name="Edit region").click()
    assert_accessible(page, (DESKTOP,))
    page.get_by_label("Value").fill("us-east-1")
    page.get_by_role("button", name="Save variable").click()
    expect(page.get_by_role("cell", name="us-east-1")).to_be_visible()
    assert_accessible(page, (DESKTOP,))

    page.goto(f"{site.base}/app/gamma/members")  # an invitation cancelled; another declined by its person
    for email in ("carol@example.com", "bob@example.com"):
        page.get_by_label("E-mail address").fill(email)
        page.get_by_role("button", name="Invite").click()
        expect(page.get_by_role("row").filter(has_text=email)).to_contain_text("Invited")
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Remove carol@example.com").click()
    expect(page.get_by_role("row").filter(has_text="carol@example.com")).to_have_count(0)
    assert_accessible(page, (DESKTOP,))
    icon = page.locator("link[rel=icon]").get_attribute("href")  # the favicon every page names
    got = page.request.get(f"{site.base}{icon}")
    assert got.status == 200 and got.headers["content-type"].startswith("image/svg+xml")
    page.get_by_role("button", name="Sign out").click()
    page.get_by_label("API token").fill(bob_token)
    page.get_by_role("button", name="Sign in").click()
    page.get_by_role("button", name="Decline the invitation to gamma").click()
    expect(page.get_by_role("status")).to_contain_text("You declined the invitation to gamma")
    expect(page.get_by_role("button", name="Accept the invitation to gamma")).to_have_count(0)
    assert_accessible(page, (DESKTOP,))


def test_the_workspace_pages_at_phone_width(site: Site, guarded: Guarded, page: Any) -> None:
    """The pages whose layout changes with the organization navigation on top (those of the workspace whose run
    awaits an override, its policy results on the run page): nothing wider than a phone."""
    need_axe()
    site.sign_in(page)
    page.set_viewport_size(PHONE)
    for path in ("", "/runs", f"/runs/{guarded.run_id}", "/health", "/settings", "/access"):
        page.goto(f"{site.base}/app/acme/workspaces/guarded{path}")
        expect(page.get_by_role("navigation", name="Organization").get_by_role("link", name="Registry")).to_be_visible()
        expect(ws_tab(page, "Overview")).to_be_visible()
        if path.startswith("/runs/"):  # its policy results (loaded after the page), then measured
            expect(page.locator("#run-policies .policy-outcomes")).to_contain_text("tagged")
        overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 0, f"{path or 'overview'} is {overflow}px wider than a phone"
        assert_accessible(page, (PHONE,))
    page.goto(f"{site.base}/app/acme/policies")  # with its set and policy
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth"), "the Policies page overflows"
    assert_accessible(page, (PHONE,))
