"""The organization pages HCP Terraform users look for (issue 24), in chromium against the real app (in-memory
adapters, the `ui` fixture of test_web_ui_first_day_browser): organization settings, teams and their members and
organization access, team access to a workspace and to a project, projects, and a workspace's name and tags. Each
form's `curl` equivalent is checked by sending it. Screenshots at 375 px and desktop width go to
.build/screenshots (and /tmp/orgui-*.png)."""

from __future__ import annotations

import json
import re
import shlex
from typing import Any

import httpx
import pytest
from terrace.domain.principal import Principal, PrincipalKind

from .conftest import DESKTOP, SHOTS, assert_accessible, need_axe
from .test_web_ui_first_day_browser import UI, ui

playwright_api = pytest.importorskip("playwright.sync_api")
expect = playwright_api.expect
__all__ = ["ui"]  # the fixture
PHONE = {"width": 375, "height": 812}


def shoot(page: Any, name: str) -> None:
    """The page at 375 px and at desktop width, full height."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    for suffix, size in (("", PHONE), ("-desktop", DESKTOP)):
        page.set_viewport_size(size)
        page.screenshot(path=str(SHOTS / f"org-{name}{suffix}.png"), full_page=True)
        page.screenshot(path=f"/tmp/orgui-{name}{suffix}.png", full_page=True)
    page.set_viewport_size(PHONE)


def member(ui: UI, username: str) -> str:
    """A user with an active membership of acme (no team), and their API token."""
    user = ui.container.accounts.create_user(username, f"{username}@example.com")
    ui.container.memberships.ensure(ui.container.organizations.lookup("acme").key, user)
    return ui.container.accounts.issue_token(PrincipalKind.USER, user.id, description="laptop").secret


def send_curl(page: Any, what: str, token: str) -> httpx.Response:
    """Open the `curl` equivalent under the form `what` names and send what it says, as curl would."""
    page.get_by_text(f"API equivalent of {what} (curl)").click()
    command = page.locator("details.curl[open] pre").last.inner_text()
    words = shlex.split(command.replace("$TOKEN", token))
    method = words[words.index("-X") + 1] if "-X" in words else "GET"
    url = next(w for w in words if w.startswith("http"))
    body = json.loads(words[words.index("-d") + 1]) if "-d" in words else None
    headers = dict(words[i + 1].split(": ", 1) for i, w in enumerate(words) if w == "-H")
    return httpx.request(method, url, json=body, headers=headers, timeout=30)


def test_organization_settings_owners_change_and_members_see(ui: UI, page: Any) -> None:
    page.set_viewport_size(PHONE)
    ui.workspace("web")
    bob = member(ui, "bob")
    ui.sign_in(page)
    page.goto(f"{ui.base}/app/acme/workspaces")
    page.get_by_role("link", name="Organization settings").click()
    expect(page.get_by_role("heading", name="Organization settings")).to_be_visible()
    page.get_by_label("Notification e-mail").fill("not-an-address")
    page.get_by_role("button", name="Save settings").click()
    expect(page.get_by_role("alert")).to_contain_text("email")  # on the page it came from, not JSON
    expect(page.get_by_label("Notification e-mail")).to_have_attribute("aria-invalid", "true")
    page.get_by_label("Notification e-mail").fill("platform@example.com")
    page.get_by_label("Default execution mode").select_option("local")
    page.get_by_label("Cost estimation").uncheck()
    page.get_by_role("button", name="Save settings").click()
    expect(page.get_by_text("Settings saved.")).to_be_visible()
    org = ui.container.organizations.lookup("acme")
    assert (org.email, org.default_execution_mode, org.cost_estimation_enabled) == (
        "platform@example.com",
        "local",
        False,
    )
    expect(page.get_by_label("Session timeout")).to_have_count(0)  # the API keeps it; it changes no web session
    answer = send_curl(page, "saving the settings", ui.token)  # the PATCH it shows, sent as shown
    assert answer.status_code == 200, answer.text
    assert answer.json()["data"]["attributes"]["default-execution-mode"] == "local"
    shoot(page, "settings")

    page.get_by_label("Name", exact=True).fill("acme-platform")
    page.get_by_role("button", name="Save settings").click()
    expect(page.get_by_text("renamed from acme")).to_be_visible()
    assert page.url.startswith(f"{ui.base}/app/acme-platform/settings")
    assert page.goto(f"{ui.base}/app/acme/settings").status == 404  # the old address is gone at once
    expect(page.get_by_role("heading", level=1)).to_be_visible()
    page.goto(f"{ui.base}/app/acme-platform/settings")
    page.get_by_role("button", name="Sign out").click()

    page.get_by_label("API token").fill(bob)  # a member, not an owner: sees the settings, cannot change them
    page.get_by_role("button", name="Sign in").click()
    page.goto(f"{ui.base}/app/acme-platform/settings")
    expect(page.get_by_text("Only the organization's owners can change these settings.")).to_be_visible()
    expect(page.get_by_role("button", name="Save settings")).to_be_disabled()
    expect(page.get_by_label("Notification e-mail")).to_have_value("platform@example.com")
    shoot(page, "settings-member")


def test_teams_members_and_organization_access(ui: UI, page: Any) -> None:
    page.set_viewport_size(PHONE)
    member(ui, "bob")
    carol = member(ui, "carol")
    ui.sign_in(page)
    page.goto(f"{ui.base}/app/acme/teams")
    expect(page.get_by_role("link", name="owners")).to_be_visible()
    page.get_by_label("Name").fill("devs")
    page.get_by_label("manage-workspaces").check()
    page.get_by_role("button", name="Create team").click()
    expect(page.get_by_role("heading", name="Team devs")).to_be_visible()
    team_id = page.url.split("/teams/")[1].split("?")[0]

    page.get_by_label("Add a member").fill("nobody")
    page.get_by_role("button", name="Add member").click()
    expect(page.get_by_role("alert")).to_contain_text("user nobody not found")
    page.get_by_label("Add a member").fill("bob")
    page.get_by_role("button", name="Add member").click()
    expect(page.get_by_text("Member added.")).to_be_visible()
    page.get_by_label("Add a member").fill("carol@example.com")  # by the e-mail address of the membership
    page.get_by_role("button", name="Add member").click()
    expect(page.get_by_role("cell", name="carol", exact=True)).to_be_visible()
    team = ui.container.teams.load(team_id)
    assert {u.username for u in ui.container.accounts.get_users(list(team.users))} == {"bob", "carol"}

    page.get_by_label("manage-projects").check()
    page.get_by_role("button", name="Save team").click()
    expect(page.get_by_text("Team saved.")).to_be_visible()
    team = ui.container.teams.load(team_id)
    assert team.org_access["manage-projects"] and team.org_access["manage-workspaces"]
    assert not team.org_access["manage-teams"]
    page.once("dialog", lambda dialog: dialog.accept())  # removing asks first
    page.get_by_role("button", name="Remove bob").click()
    expect(page.get_by_text("Member removed.")).to_be_visible()
    assert {u.username for u in ui.container.accounts.get_users(list(ui.container.teams.load(team_id).users))} == {
        "carol"
    }
    answer = send_curl(page, "saving the team", ui.token)
    assert answer.status_code == 200 and answer.json()["data"]["attributes"]["organization-access"]["manage-projects"]
    shoot(page, "team")

    page.goto(f"{ui.base}/app/acme/teams")
    page.get_by_role("link", name="owners").click()  # protected as the API protects it
    expect(page.get_by_label("Name", exact=True)).to_have_attribute("readonly", "")
    expect(page.get_by_label("manage-teams")).to_be_checked()
    expect(page.get_by_label("manage-teams")).to_be_disabled()
    expect(page.get_by_role("button", name="Delete team")).to_have_count(0)
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Remove alice").click()
    expect(page.get_by_role("alert")).to_contain_text("cannot be emptied")

    page.goto(f"{ui.base}/app/acme/teams/{team_id}")
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Delete team").click()
    expect(page.get_by_text("Team devs was deleted.")).to_be_visible()
    page.get_by_role("button", name="Sign out").click()

    page.get_by_label("API token").fill(carol)  # a member without manage-teams: told, and refused on the page
    page.get_by_role("button", name="Sign in").click()
    page.goto(f"{ui.base}/app/acme/teams")
    expect(page.get_by_text("No team you can see")).to_be_visible()
    expect(page.get_by_text("Only owners and members of a team with manage-teams create teams.")).to_be_visible()
    expect(page.get_by_role("button", name="Create team")).to_have_count(0)
    csrf = page.locator("input[name=csrf_token]").first.input_value()
    refused = page.request.post(f"{ui.base}/app/acme/teams", form={"name": "mine", "csrf_token": csrf})
    assert refused.status == 403 and 'role="alert"' in refused.text() and '"errors"' not in refused.text()
    assert [t.name for t in ui.container.teams.list(ui_owner(ui), "acme")] == ["owners"]
    shoot(page, "teams-member")


def ui_owner(ui: UI) -> Principal:
    alice = ui.container.accounts.find_user("alice")
    assert alice is not None
    return Principal(PrincipalKind.USER, alice.id, alice.username)


def test_team_access_to_a_workspace(ui: UI, page: Any) -> None:
    page.set_viewport_size(PHONE)
    ws_id = ui.workspace("web")
    ui.container.teams.create(ui_owner(ui), "acme", {"name": "devs"})
    ui.sign_in(page)
    page.goto(f"{ui.base}/app/acme/workspaces/web")
    page.get_by_role("link", name="Team access").click()
    expect(page.get_by_role("heading", name="Team access", level=1)).to_be_visible()
    expect(page.get_by_label("Team", exact=True).locator("option")).to_have_text(["devs"])  # owners may do all
    page.get_by_label("Team", exact=True).select_option(label="devs")
    page.get_by_label("Access level").select_option("write")
    page.get_by_role("button", name="Add access").click()
    expect(page.get_by_text("Access added.")).to_be_visible()
    (grant,) = ui.container.team_access.list_for_workspace(ui_owner(ui), ws_id)
    assert grant.access == "write"

    page.get_by_label("Access of devs", exact=True).select_option("custom")
    page.get_by_text("Custom permissions").first.click()
    page.locator(f"#{grant.id}-ws-runs").select_option("plan")
    page.locator(f"#{grant.id}-ws-workspace-locking").check()
    page.get_by_role("button", name="Save the access of devs").click()
    expect(page.get_by_text("Access changed.")).to_be_visible()
    (grant,) = ui.container.team_access.list_for_workspace(ui_owner(ui), ws_id)
    assert grant.access == "custom" and grant.workspace_fields["runs"] == "plan"
    assert grant.workspace_fields["workspace-locking"] is True
    shoot(page, "workspace-access")
    page.once("dialog", lambda dialog: dialog.accept())  # removing asks first
    page.get_by_role("button", name="Remove the access of devs").click()
    expect(page.get_by_text("Access removed.")).to_be_visible()
    assert ui.container.team_access.list_for_workspace(ui_owner(ui), ws_id) == []
    answer = send_curl(page, "adding team access", ui.token)
    assert answer.status_code == 404  # the TEAM_ID placeholder: the shape is the API's, the id is yours
    assert "team TEAM_ID not found" in answer.text


def test_projects_their_workspaces_and_team_access(ui: UI, page: Any) -> None:
    page.set_viewport_size(PHONE)
    ws_id = ui.workspace("web")
    ui.container.teams.create(ui_owner(ui), "acme", {"name": "devs"})
    ui.sign_in(page)
    page.goto(f"{ui.base}/app/acme/workspaces")
    page.get_by_role("link", name="Projects").click()
    expect(page.get_by_role("row", name=re.compile("Default Project.*web"))).to_be_visible()
    page.get_by_label("Name").fill("Default Project")
    page.get_by_role("button", name="Create project").click()
    expect(page.get_by_role("alert")).to_contain_text("already exists")
    page.get_by_label("Name").fill("platform")
    page.get_by_role("button", name="Create project").click()
    expect(page.get_by_role("heading", name="Project platform")).to_be_visible()
    project_id = page.url.split("/projects/")[1].split("?")[0]

    page.get_by_label("Team", exact=True).select_option(label="devs")
    page.get_by_label("Access level").select_option("maintain")
    page.get_by_role("button", name="Add access").click()
    expect(page.get_by_text("Access added.")).to_be_visible()
    (grant,) = ui.container.team_access.list_for_project(ui_owner(ui), project_id)
    assert grant.access == "maintain"
    page.get_by_label("Access of devs", exact=True).select_option("custom")
    page.get_by_text("Custom permissions").first.click()
    page.locator(f"#{grant.id}-project-access-settings").select_option("update")
    page.locator(f"#{grant.id}-workspace-access-runs").select_option("apply")
    page.locator(f"#{grant.id}-workspace-access-create").check()
    page.get_by_role("button", name="Save the access of devs").click()
    expect(page.get_by_text("Access changed.")).to_be_visible()
    (grant,) = ui.container.team_access.list_for_project(ui_owner(ui), project_id)
    assert grant.access == "custom" and grant.fields["project-access"]["settings"] == "update"
    assert grant.fields["workspace-access"]["runs"] == "apply" and grant.fields["workspace-access"]["create"] is True
    page.get_by_label("Name", exact=True).fill("platform-core")
    page.get_by_role("button", name="Save project").click()
    expect(page.get_by_role("heading", name="Project platform-core")).to_be_visible()

    move = {
        "data": {"type": "workspaces", "relationships": {"project": {"data": {"type": "projects", "id": project_id}}}}
    }
    assert ui.api.patch(f"/api/v2/workspaces/{ws_id}", json=move).status_code == 200
    page.reload()
    expect(page.get_by_role("listitem").get_by_role("link", name="web")).to_be_visible()
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Delete project").click()  # not empty: the API's error, on the page
    expect(page.get_by_role("alert")).to_contain_text("still holds 1 workspaces")
    shoot(page, "project")

    default = next(p for p in ui.container.projects.list(ui_owner(ui), "acme") if p.is_default)
    move["data"]["relationships"]["project"]["data"]["id"] = default.id
    assert ui.api.patch(f"/api/v2/workspaces/{ws_id}", json=move).status_code == 200
    page.goto(f"{ui.base}/app/acme/projects/{project_id}")  # (the refusal answered the form's POST)
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Delete project").click()
    expect(page.get_by_text("Project platform-core was deleted.")).to_be_visible()
    assert [p.name for p in ui.container.projects.list(ui_owner(ui), "acme")] == ["Default Project"]
    shoot(page, "projects")
    answer = send_curl(page, "creating a project", ui.token)
    assert answer.status_code == 201, answer.text


def test_a_workspace_is_renamed_and_tagged_in_its_settings(ui: UI, page: Any) -> None:
    page.set_viewport_size(PHONE)
    ws_id = ui.workspace("web")
    ui.workspace("db")
    ui.sign_in(page)
    page.goto(f"{ui.base}/app/acme/workspaces/web/settings")
    page.get_by_label("Add tags").fill("prod, eu-west")
    page.get_by_role("button", name="Add tags").click()
    expect(page.get_by_text("Tags saved.")).to_be_visible()
    assert ui.container.workspaces.load(ws_id).tag_names == ("eu-west", "prod")
    page.get_by_label("Add tags").fill("Not A Tag!")
    page.get_by_role("button", name="Add tags").click()
    expect(page.get_by_role("alert")).to_be_visible()
    page.get_by_role("button", name="Remove tag prod").click()
    expect(page.get_by_role("button", name="Remove tag prod")).to_have_count(0)
    assert ui.container.workspaces.load(ws_id).tag_names == ("eu-west",)

    page.get_by_label("Name", exact=True).fill("db")
    page.get_by_role("button", name="Save settings").click()
    expect(page.get_by_role("alert")).to_contain_text("already exists")  # taken: said on the settings page
    page.get_by_label("Name", exact=True).fill("web-eu")
    page.get_by_role("button", name="Save settings").click()
    expect(page.get_by_text("renamed from web")).to_be_visible()
    assert page.url.startswith(f"{ui.base}/app/acme/workspaces/web-eu/settings")
    assert ui.container.workspaces.load(ws_id).name == "web-eu"
    assert page.goto(f"{ui.base}/app/acme/workspaces/web").status == 404
    page.goto(f"{ui.base}/app/acme/workspaces/web-eu/settings")
    shoot(page, "workspace-settings")
    answer = send_curl(page, "saving the settings", ui.token)
    assert answer.status_code == 200 and answer.json()["data"]["attributes"]["name"] == "web-eu"


def test_a_vcs_provider_is_added_offered_to_workspaces_and_deleted(ui: UI, page: Any) -> None:
    need_axe()
    page.set_viewport_size(PHONE)
    ui.workspace("web")
    ui.sign_in(page)
    page.goto(f"{ui.base}/app/acme/settings")
    page.get_by_role("link", name="Version control").click()
    expect(page.get_by_role("heading", name="Version control", level=1)).to_be_visible()
    page.get_by_label("Provider", exact=True).select_option("gitea")
    page.get_by_label("Personal access token").fill("gta_browsertoken")
    page.get_by_role("button", name="Add provider").click()
    expect(page.get_by_role("alert")).to_contain_text("http-url is required")  # a self-hosted forge's address
    expect(page.get_by_label("HTTP URL")).to_have_attribute("aria-invalid", "true")
    expect(page.get_by_label("Personal access token")).to_have_value("")  # never sent back
    assert_accessible(page)
    page.get_by_label("Name (optional)").fill("our gitea")
    page.get_by_label("HTTP URL").fill("https://gitea.example.com")
    page.get_by_label("Personal access token").fill("gta_browsertoken")
    page.get_by_role("button", name="Add provider").click()
    expect(page.get_by_text("Provider added")).to_be_visible()
    [client] = ui.api.get("/api/v2/organizations/acme/oauth-clients").json()["data"]
    assert (client["attributes"]["service-provider"], client["attributes"]["api-url"]) == (
        "github_enterprise", "https://gitea.example.com/api/v1")  # fmt: skip
    expect(page.get_by_role("cell", name="GitHub Enterprise", exact=True)).to_be_visible()  # HCP's name of it
    assert_accessible(page)
    shoot(page, "vcs-providers")
    page.goto(f"{ui.base}/app/acme/workspaces/web/settings/version-control")
    expect(page.get_by_label("Provider and OAuth token").locator("option")).to_have_count(1)
    page.goto(f"{ui.base}/app/acme/settings/version-control")
    page.once("dialog", lambda dialog: dialog.accept())  # deleting asks first
    page.get_by_role("button", name=f"Delete our gitea ({client['id']})").click()
    expect(page.get_by_text("Provider deleted")).to_be_visible()
    expect(page.get_by_text("No VCS provider yet.")).to_be_visible()
    assert ui.api.get("/api/v2/organizations/acme/oauth-clients").json()["data"] == []


def test_an_oauth_application_is_connected_through_the_forge_s_authorize_page(
    free_port: int, page: Any, tmp_path: Any
) -> None:
    """Settings → Version control's Connect sends the owner to the forge (the GitHub twin's authorize page, its
    OAuth web flow as GitHub documents it); approving there comes back to the client's callback-url, whose code
    becomes the client's OAuth token."""
    from forge_twin import ForgeTwin
    from terrace.adapters.httpx_outbound import HttpxOutbound
    from terrace.bootstrap import build_memory
    from terrace.config import Settings
    from terrace.domain.destinations import Allowance

    from .conftest import serve_app

    base = f"http://localhost:{free_port}"
    settings = Settings(table_name="memory", blob_bucket="memory", url_signing_secret="test-secret", public_url=base)
    container = build_memory(settings)
    container.outbound = HttpxOutbound(Allowance.parse(["127.0.0.0/8"]))  # the twin's token endpoint, before use
    user = container.accounts.create_user("alice", "alice@example.com")
    container.organizations.create(Principal(PrincipalKind.USER, user.id, user.username), "acme", "ops@example.com")
    token = container.accounts.issue_token(PrincipalKind.USER, user.id, description="laptop").secret
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/vnd.api+json"}
    with (
        ForgeTwin(tmp_path, "gho_fromtheflow") as twin,
        serve_app(container, free_port),
        httpx.Client(base_url=base, headers=headers, timeout=30) as api,
    ):
        attributes = {"service-provider": "github_enterprise", "name": "our forge", "http-url": twin.http_url,
                      "api-url": twin.api_url, "key": "pending", "secret": "pending"}  # fmt: skip
        made = api.post("/api/v2/organizations/acme/oauth-clients",
                        json={"data": {"type": "oauth-clients", "attributes": attributes}}).json()["data"]  # fmt: skip
        key, secret = twin.oauth.register(made["attributes"]["callback-url"])  # the operator registers it
        update = {"data": {"type": "oauth-clients", "attributes": {"key": key, "secret": secret}}}
        assert api.patch(f"/api/v2/oauth-clients/{made['id']}", json=update).status_code == 200

        page.goto(f"{base}/app/sign-in")
        page.get_by_label("API token").fill(token)
        page.get_by_role("button", name="Sign in").click()
        page.goto(f"{base}/app/acme/settings/version-control")
        expect(page.get_by_text(made["attributes"]["callback-url"])).to_be_visible()
        page.get_by_role("button", name=f"Connect our forge ({made['id']})").click()
        expect(page.get_by_role("heading", name=f"Authorize {key}")).to_be_visible()  # the forge's page
        assert page.url.startswith(f"{twin.http_url}/login/oauth/authorize?")
        page.get_by_role("link", name="Authorize").click()
        expect(page.get_by_text("Provider connected")).to_be_visible()
        assert page.url == f"{base}/app/acme/settings/version-control?connected=1"
        expect(page.get_by_role("button", name=f"Reconnect our forge ({made['id']})")).to_be_visible()
        [listed] = api.get(f"/api/v2/oauth-clients/{made['id']}/oauth-tokens").json()["data"]
        stored = container.vcs_store.token(listed["id"])
        assert stored is not None and container.oauth_clients.credential(stored.public) == "gho_fromtheflow"
        assert twin.problems == []
