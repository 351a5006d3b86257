"""The organization's Members page (issue 45): invite by e-mail address, pending invitations, the invitee's accept
and decline on their Organizations page, removing. Inviting the address of an existing account invites that
account (never a second one, which the team form would then add)."""

from __future__ import annotations

import re

import httpx
import pytest
from fastapi.testclient import TestClient
from terrace.bootstrap import Container, build_memory
from terrace.config import Settings
from terrace.domain.principal import Principal, PrincipalKind
from terrace.web.app import create_app
from ui_helpers import sign_in


def csrf_of(html: str) -> str:
    match = re.search(r'name="csrf_token" value="([^"]+)"', html)
    assert match
    return match.group(1)


def browser(container: Container, username: str) -> TestClient:
    """A signed-in browser of the user `username` (created when missing)."""
    user = container.accounts.find_user(username) or container.accounts.create_user(username, f"{username}@example.com")
    token = container.accounts.issue_token(PrincipalKind.USER, user.id, description="laptop").secret
    client = TestClient(create_app(container), base_url="https://testserver", follow_redirects=False)
    assert sign_in(client, token).status_code == 303
    return client


def post(client: TestClient, page: str, action: str, **data: str) -> httpx.Response:
    return client.post(action, data={"csrf_token": csrf_of(client.get(page).text), **data})


@pytest.fixture
def container() -> Container:
    built = build_memory(Settings(table_name="memory", blob_bucket="memory", url_signing_secret="sign"))
    alice = built.accounts.create_user("alice", "alice@example.com")
    built.organizations.create(Principal(PrincipalKind.USER, alice.id, "alice"), "acme", "ops@example.com")
    return built


def test_inviting_an_existing_accounts_address_invites_that_account_who_accepts(container: Container) -> None:
    bob = container.accounts.create_user("bob", "Bob@Example.com")  # an operator made bob's account
    owner, invitee = browser(container, "alice"), browser(container, "bob")
    page = owner.get("/app/acme/members")
    assert page.status_code == 200 and "alice@example.com" in page.text and 'aria-current="page">Members' in page.text
    sent = post(owner, "/app/acme/members", "/app/acme/members", email="bob@example.com")
    assert sent.status_code == 303 and sent.headers["location"] == "/app/acme/members?invited=bob%40example.com"
    [invited] = [
        m for m in container.memberships.list_of(container.organizations.lookup("acme")) if m.status == "invited"
    ]
    assert invited.user_id == bob.id  # bob himself, not a new account named after the address
    listed = owner.get("/app/acme/members").text
    assert "Invited" in listed and ">bob<" in listed

    home = invitee.get("/app").text  # bob sees the invitation and declines it
    assert "You are invited to <strong>acme</strong>" in home
    declined = post(invitee, "/app", f"/app/account/invitations/{invited.id}/decline")
    assert declined.status_code == 303 and declined.headers["location"] == "/app?declined=acme"
    assert "You are invited" not in invitee.get("/app").text
    assert "bob@example.com" not in owner.get("/app/acme/members").text
    assert invitee.get("/app/acme/workspaces").status_code == 404

    post(owner, "/app/acme/members", "/app/acme/members", email="bob@example.com")  # invited again: accepts
    [again] = container.memberships.own(Principal(PrincipalKind.USER, bob.id, "bob"))
    accepted = post(invitee, "/app", f"/app/account/invitations/{again.id}/accept")
    assert accepted.status_code == 303 and accepted.headers["location"] == "/app/acme/workspaces?joined=1"
    assert "you accepted the invitation" in invitee.get("/app/acme/workspaces?joined=1").text
    assert "Active" in owner.get("/app/acme/members").text

    removed = post(owner, "/app/acme/members", f"/app/acme/members/{again.id}/remove")
    assert removed.status_code == 303 and removed.headers["location"] == "/app/acme/members?removed=1"
    assert invitee.get("/app/acme/workspaces").status_code == 404


def test_refusals_show_on_the_members_page(container: Container) -> None:
    owner = browser(container, "alice")
    bad = post(owner, "/app/acme/members", "/app/acme/members", email="not-an-address")
    assert bad.status_code == 422 and 'role="alert"' in bad.text and 'aria-invalid="true"' in bad.text
    post(owner, "/app/acme/members", "/app/acme/members", email="carol@example.com")
    twice = post(owner, "/app/acme/members", "/app/acme/members", email="carol@example.com")
    assert twice.status_code == 409 and "already a member" in twice.text

    carol = container.accounts.create_user("carol2", "carol2@example.com")  # a member who manages nothing
    container.memberships.ensure(container.organizations.lookup("acme").key, carol)
    member = browser(container, "carol2")
    shown = member.get("/app/acme/members")
    assert shown.status_code == 200 and "Only owners" in shown.text and 'name="email"' not in shown.text
    token = csrf_of(shown.text)
    refused = member.post("/app/acme/members", data={"csrf_token": token, "email": "dan@example.com"})
    assert refused.status_code in (403, 404)
    [own] = container.memberships.own(Principal(PrincipalKind.USER, carol.id, "carol2"))
    assert member.post(f"/app/account/invitations/{own.id}/decline", data={"csrf_token": token}).status_code == 409

    other = container.accounts.create_user("olga", "olga@example.com")  # another organization's membership
    container.organizations.create(Principal(PrincipalKind.USER, other.id, "olga"), "other", "o@example.com")
    [theirs] = container.memberships.own(Principal(PrincipalKind.USER, other.id, "olga"))
    token = csrf_of(owner.get("/app/acme/members").text)
    assert owner.post(f"/app/acme/members/{theirs.id}/remove", data={"csrf_token": token}).status_code == 404
    assert owner.post(f"/app/account/invitations/{theirs.id}/accept", data={"csrf_token": token}).status_code == 404


ORG_PAGES = ("workspaces", "projects", "members", "teams", "varsets", "policies", "settings/tasks", "agent-pools",
             "registry", "explorer", "settings", "search")  # fmt: skip


def test_every_organization_page_has_the_same_navigation(container: Container) -> None:
    owner = browser(container, "alice")
    for slug in ORG_PAGES:
        page = owner.get(f"/app/acme/{slug}")
        assert page.status_code == 200, slug
        nav = re.search(r'<nav class="tabs" aria-label="Organization">(.*?)</nav>', page.text, re.S)
        assert nav, f"/app/acme/{slug} has no organization navigation"
        links = re.findall(r'<a href="/app/acme/([^"]+)"', nav.group(1))
        assert links == [s for s in ORG_PAGES if s != "search"], slug
        current = re.findall(r'<a href="/app/acme/([^"]+)" aria-current="page"', nav.group(1))
        assert current == [{"search": "workspaces"}.get(slug, slug)], slug


def test_a_new_workspace_goes_in_a_chosen_project_and_the_list_filters_by_project(container: Container) -> None:
    owner = browser(container, "alice")
    alice = Principal(PrincipalKind.USER, container.accounts.find_user("alice").id, "alice")  # type: ignore[union-attr]
    payments = container.projects.create(alice, "acme", {"name": "payments"})
    form = owner.get("/app/acme/workspaces/new").text
    assert f'<option value="{payments.id}">payments</option>' in form and ">Default Project</option>" in form
    made = post(owner, "/app/acme/workspaces/new", "/app/acme/workspaces/new", name="pay-api", project=payments.id)
    assert made.status_code == 303
    assert container.workspaces.get_by_name(alice, "acme", "pay-api").project_id == payments.id
    assert post(owner, "/app/acme/workspaces/new", "/app/acme/workspaces/new", name="site").status_code == 303
    unknown = post(owner, "/app/acme/workspaces/new", "/app/acme/workspaces/new", name="x", project="prj-nope")
    assert unknown.status_code == 422 and 'role="alert"' in unknown.text

    listed = owner.get("/app/acme/workspaces").text
    assert f'<option value="{payments.id}">payments</option>' in listed
    only = owner.get(f"/app/acme/workspaces?project={payments.id}").text
    assert 'href="/app/acme/workspaces/pay-api"' in only and 'href="/app/acme/workspaces/site"' not in only
    overview = owner.get("/app/acme/workspaces/pay-api").text
    assert f'<a href="/app/acme/projects/{payments.id}">payments</a>' in overview
