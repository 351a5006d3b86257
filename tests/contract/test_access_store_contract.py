"""The access store on each table (memory, SQLite, DynamoDB on moto): users and their name claims, tokens and their
lookups, single-use sign-in items spent once, organizations with what they start with and their name claims across
a rename, teams, memberships, projects and grants written only over the version read, described team tokens with their
descriptions claimed once per team, and `delete_all_of` revoking an organization's runner, organization and team
tokens, nobody else's."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pytest
from implementations import IMPLEMENTATIONS, open_table
from terrace.adapters.table import ConditionFailed
from terrace.domain.errors import Conflict, NotFound, TooManyRequests, Unauthenticated, ValidationFailed
from terrace.domain.organizations import Organization
from terrace.domain.principal import PrincipalKind
from terrace.domain.projects import Project, default_project_id
from terrace.domain.runner_enrollments import Enrollment
from terrace.domain.team_access import Grant
from terrace.domain.teams import owners_team_id
from terrace.domain.tokens import Token
from terrace.domain.users import User
from terrace.services.access.store import AccessStore
from terrace.services.access.store_accounts import RUNNER_TOKEN_SUBJECT

NOW = "2026-01-01T00:00:00Z"


@pytest.fixture(params=IMPLEMENTATIONS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[AccessStore]:
    with open_table(request.param, tmp_path, lambda: str(request.getfixturevalue("moto_endpoint"))) as table:
        yield AccessStore(table)


def _user(store: AccessStore, user_id: str, name: str) -> User:
    user = User(user_id, name, f"{name}@example.com", False, NOW)
    store.accounts.create_user(user)
    return user


def _token(store: AccessStore, token_id: str, subject: str, kind: PrincipalKind, organization: str | None) -> None:
    token = Token(token_id, kind, subject, "", f"2026-01-01T00:00:0{token_id[-1]}Z", None, None, organization)
    store.accounts.add_token(token, f"hash-{token_id}", None)


def _org(store: AccessStore, name: str, owner: str = "user-a") -> Organization:
    return store.organizations.create(
        Organization(f"org-{name}", name, name, "o@example.com", NOW, (owner,), "remote", {})
    )


def test_users_are_claimed_by_name_and_renamed_over_the_version_read(store: AccessStore) -> None:
    alice = _user(store, "user-a", "alice")
    _user(store, "user-b", "bob")
    with pytest.raises(Conflict, match="taken"):
        _user(store, "user-c", "alice")
    assert store.accounts.user_id_of("alice") == "user-a" and store.accounts.user("user-a") == alice
    assert sorted(store.accounts.user_ids()) == ["user-a", "user-b"]
    store.accounts.change_user("user-a", lambda user: {"username": "ally", "suspended": True}, "lost")
    assert store.accounts.user_id_of("alice") is None and store.accounts.user_id_of("ally") == "user-a"
    assert store.accounts.user("user-a") == dataclasses.replace(alice, username="ally", suspended=True)
    with pytest.raises(Conflict, match="name taken"):
        store.accounts.change_user("user-a", lambda user: {"username": "bob"}, "name taken")
    user, version = store.accounts.versioned_user("user-a")
    store.accounts.delete_user(user, version)
    assert store.accounts.user("user-a") is None and store.accounts.user_id_of("ally") is None
    with pytest.raises(NotFound):
        store.accounts.versioned_user("user-a")


def test_a_token_authenticates_through_its_lookup_until_revoked(store: AccessStore) -> None:
    _user(store, "user-a", "alice")
    _token(store, "at-2", "user-a", PrincipalKind.USER, None)
    _token(store, "at-1", "user-a", PrincipalKind.USER, None)
    lookup = store.accounts.lookup("hash-at-1")
    assert lookup is not None and lookup.principal().username == "alice" and lookup.version == 1
    assert store.accounts.record_use(lookup, 1000, NOW) and not store.accounts.record_use(lookup, 1001, NOW)
    assert [(t.id, t.last_used_at) for t in store.accounts.tokens_of("user-a")] == [("at-1", NOW), ("at-2", None)]
    store.accounts.revoke("at-1")
    assert store.accounts.lookup("hash-at-1") is None and [t.id for t in store.accounts.tokens_of("user-a")] == ["at-2"]
    with pytest.raises(NotFound):
        store.accounts.revoke("at-1")


def test_a_suspended_user_gets_no_token_and_a_suspension_reaches_the_lookups(store: AccessStore) -> None:
    alice = _user(store, "user-a", "alice")
    _token(store, "at-1", "user-a", PrincipalKind.USER, None)
    store.accounts.change_user("user-a", lambda user: {"suspended": True}, "lost")
    store.accounts.refresh_lookups(dataclasses.replace(alice, suspended=True))
    lookup = store.accounts.lookup("hash-at-1")
    assert lookup is not None
    with pytest.raises(Unauthenticated):
        lookup.principal()
    with pytest.raises(Conflict, match="suspended"):
        _token(store, "at-2", "user-a", PrincipalKind.USER, None)


def test_single_use_items_are_spent_once(store: AccessStore) -> None:
    sign_in = store.sign_in
    sign_in.put_login_code("code", {"user_id": "user-a", "challenge": "c", "redirect_uri": "r", "expires_at": 9})
    assert sign_in.spend_login_code("code") is not None and sign_in.spend_login_code("code") is None
    sign_in.put_oidc_state("state", {"nonce": "n", "verifier": "v", "browser": "b", "next": "/", "expires_at": 9})
    assert (sign_in.oidc_state("state") or {})["nonce"] == "n"
    assert sign_in.spend_oidc_state("state") and not sign_in.spend_oidc_state("state")
    enrollment = Enrollment("runner-1", "acme", "at-r", 99, 2_000_000_000, binds=False)
    sign_in.create_enrollment("tre.code", enrollment)
    stored = sign_in.enrollment("tre.code")
    assert stored is not None and stored.enrollment == enrollment
    assert sign_in.spend_enrollment(stored) and not sign_in.spend_enrollment(stored)
    spent = sign_in.enrollment("tre.code")
    assert spent is not None and spent.enrollment.used and spent.enrollment.organization == ""


def test_a_login_code_is_read_back_whole_when_spent(store: AccessStore) -> None:
    record = {"user_id": "user-a", "challenge": "c", "redirect_uri": "r", "expires_at": 9}
    store.sign_in.put_login_code("code", record)
    spent = store.sign_in.spend_login_code("code")
    assert spent is not None and {k: spent[k] for k in record} == record


def test_oidc_links_lose_to_a_concurrent_sign_in_and_sessions_end_together(store: AccessStore) -> None:
    lost: list[str] = []
    store.sign_in.put_oidc_link("iss", "sub", {"user_id": "user-a", "groups": []}, None)
    with pytest.raises(ConditionFailed):
        store.sign_in.put_oidc_link("iss", "sub", {"user_id": "user-b"}, None, lost=lambda: lost.append("undo"))
    link = store.sign_in.oidc_link("iss", "sub")
    assert lost == ["undo"] and link is not None and link["user_id"] == "user-a"
    store.sign_in.put_oidc_link("iss", "sub", {"user_id": "user-c"}, link)
    assert (store.sign_in.oidc_link("iss", "sub") or {})["user_id"] == "user-c"
    for session in ("s1", "s2"):
        store.sign_in.start_session(session, {"subject_id": "user-a", "csrf": "x", "expires_at": 10**9})
    store.sign_in.start_session("s3", {"subject_id": "user-b", "csrf": "x", "expires_at": 10**9})
    assert store.sign_in.end_sessions("user-a") == 2
    assert store.sign_in.session("s1") is None and store.sign_in.session("s3") is not None


def test_an_organization_starts_with_its_owners_team_membership_and_default_project(store: AccessStore) -> None:
    org = _org(store, "acme")
    owners = store.teams.team(owners_team_id("acme"))
    assert owners is not None and owners.owners and owners.users == ("user-a",)
    assert store.projects.project(default_project_id("acme")) is not None
    member = store.teams.membership("acme", "user-a")
    assert member is not None and member.status == "active"
    assert store.organizations.record("acme").org == org and [o.name for o in store.organizations.all()] == ["acme"]
    with pytest.raises(Conflict):
        store.organizations.refuse_taken("ACME", None)
    with pytest.raises(Conflict):
        _org(store, "acme")


def test_a_rename_keeps_the_old_name_reserved_and_the_key(store: AccessStore) -> None:
    _org(store, "acme")
    renamed = store.organizations.update(store.organizations.record("acme"), "globex", {"email": "g@example.com"}, None)
    assert renamed.key == "acme" and renamed.name == "globex" and renamed.email == "g@example.com"
    with pytest.raises(NotFound):
        store.organizations.record("acme")
    with pytest.raises(Conflict, match="reserved"):
        store.organizations.refuse_taken("acme", None)
    store.organizations.refuse_taken("acme", "acme")  # its own old name: it may take it back
    stale = store.organizations.record("globex")
    store.organizations.set_settings(store.organizations.record("globex"), {"is-disabled": True})
    with pytest.raises(Conflict):
        store.organizations.set_settings(stale, {"is-disabled": False})


def test_teams_and_memberships_change_over_the_version_read(store: AccessStore) -> None:
    _org(store, "acme")
    team = store.teams.create_team("acme", "devs", {"visibility": "organization", "sso_team_id": "g1"}, "taken")
    with pytest.raises(Conflict, match="taken"):
        store.teams.create_team("acme", "devs", {}, "taken")
    assert [t.id for t in store.teams.sso_teams("g1")] == [team.id]
    checked: list[dict[str, bool]] = []
    renamed = store.teams.update_team(team, "builders", {"org_access": {"manage-vcs-settings": True}}, checked.append)
    assert checked == [{}] and renamed.name == "builders" and renamed.org_access["manage-vcs-settings"]
    with pytest.raises(Conflict):
        store.teams.update_team(team, "again", {}, checked.append)  # the version read is gone
    store.teams.write_members(renamed, {"user-b"}, None)
    owners = store.teams.team(owners_team_id("acme"))
    assert owners is not None
    store.teams.write_members(owners, {"user-a", "user-b"}, {"user-a", "user-b"})
    assert store.organizations.record("acme").org.owners == ("user-a", "user-b")
    invited = store.teams.add_membership("acme", "user-b", "b@example.com", "invited", hidden=True)
    assert invited is not None and invited.hidden
    assert store.teams.add_membership("acme", "user-b", "", "invited") is None
    assert store.teams.membership_pointer(invited.id) == ("acme", "user-b")
    accepted = store.teams.accept(invited, "other@example.com")
    assert accepted.status == "active" and not accepted.hidden and accepted.email == "b@example.com"
    assert sorted(m.user_id for m in store.teams.memberships_of("acme")) == ["user-a", "user-b"]
    store.teams.delete_membership(accepted)
    assert store.teams.membership("acme", "user-b") is None and store.teams.membership_pointer(invited.id) is None
    store.teams.delete_team(renamed)
    assert store.teams.team(team.id) is None and store.teams.sso_teams("g1") == []


def test_invitations_are_counted_per_day(store: AccessStore, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("terrace.domain.limits.INVITATIONS_PER_DAY", 2)
    store.teams.count_invitation("user-a", "2026-01-01")
    store.teams.count_invitation("user-a", "2026-01-01")
    with pytest.raises(TooManyRequests):
        store.teams.count_invitation("user-a", "2026-01-01")
    store.teams.count_invitation("user-a", "2026-01-02")  # a new day counts anew


def test_projects_and_grants_one_per_team_and_target(store: AccessStore) -> None:
    _org(store, "acme")
    project = store.projects.create_project(Project("prj-1", "Apps", "acme", "", "", 1), "taken")
    with pytest.raises(Conflict, match="taken"):
        store.projects.create_project(Project("prj-2", "Apps", "acme", "", "", 1), "taken")
    settings = {"tag_bindings": (("env", "prod"),), "default_execution_mode": "agent",
                "default_agent_pool_id": "apool-1", "auto_destroy_activity_duration": "14d"}  # fmt: skip
    changed = dataclasses.replace(project, name="Services", description="the services", **settings)
    renamed = store.projects.update_project(project, changed)
    assert renamed.name == "Services" and renamed.description == "the services" and renamed.version == 2
    assert store.projects.project("prj-1") == renamed and renamed.tag_bindings == (("env", "prod"),)
    cleared = store.projects.update_project(renamed, dataclasses.replace(renamed, default_agent_pool_id=None))
    assert store.projects.project("prj-1") == cleared and cleared.default_agent_pool_id is None
    store.projects.create_project(Project("prj-3", "Apps", "acme", "", "", 1), "taken")  # the old name is free again
    fields = {"project-access": {}, "workspace-access": {"runs": "apply"}}
    grant = store.projects.add_grant(Grant("tprj-1", "project", "team-x", "prj-1", "acme", "custom", fields), "has")
    with pytest.raises(Conflict, match="has"):
        store.projects.add_grant(Grant("tprj-2", "project", "team-x", "prj-1", "acme", "read", {
            "project-access": {}, "workspace-access": {}}), "has")  # fmt: skip
    ws_grant = store.projects.add_grant(Grant("tws-1", "workspace", "team-x", "ws-1", "acme", "read", {}), "has")
    assert store.projects.grant("tws-1", "workspace") == ws_grant and store.projects.workspace_grants("acme") == [
        ws_grant
    ]
    updated = store.projects.update_grant(grant, "admin", {"project-access": {}, "workspace-access": {}})
    assert store.projects.project_grants("acme") == [updated] and updated.access == "admin"
    store.projects.delete_project(renamed)
    assert store.projects.project("prj-1") is None and store.projects.project_grants("acme") == []
    store.projects.remove_grant(ws_grant)
    assert store.projects.grant("tws-1", "workspace") is None


def test_deleting_an_organization_takes_its_teams_memberships_projects_and_grants(store: AccessStore) -> None:
    org = _org(store, "acme")
    team = store.teams.create_team("acme", "devs", {"sso_team_id": "g1"}, "taken")
    store.projects.add_grant(Grant("tws-1", "workspace", team.id, "ws-1", "acme", "read", {}), "has")
    store.organizations.delete(org)
    with pytest.raises(NotFound):
        store.organizations.record("acme")
    assert store.teams.teams_of("acme") == [] and store.teams.sso_teams("g1") == []
    assert store.projects.projects_of("acme") == [] and store.projects.workspace_grants("acme") == []
    assert store.teams.memberships_of("acme") == [] and store.organizations.by_key("acme") is None


def test_delete_all_of_revokes_the_organizations_runner_and_organization_tokens(store: AccessStore) -> None:
    _token(store, "at-1", RUNNER_TOKEN_SUBJECT, PrincipalKind.RUNNER, "acme")
    _token(store, "at-2", RUNNER_TOKEN_SUBJECT, PrincipalKind.RUNNER, "globex")
    _token(store, "at-3", "acme", PrincipalKind.ORGANIZATION, "acme")
    _token(store, "at-4", "globex", PrincipalKind.ORGANIZATION, "globex")
    store.delete_all_of(organization="acme")
    assert [t.id for t in store.accounts.tokens_of(RUNNER_TOKEN_SUBJECT)] == ["at-2"]
    assert store.accounts.tokens_of("acme") == [] and [t.id for t in store.accounts.tokens_of("globex")] == ["at-4"]
    assert store.accounts.lookup("hash-at-1") is None and store.accounts.lookup("hash-at-2") is not None


def _team_token(store: AccessStore, token_id: str, team: str, description: str | None) -> None:
    token = Token(token_id, PrincipalKind.TEAM, team, description or "", NOW, None, None, "acme",
                  named=description is not None, created_by=("users", "user-a"))  # fmt: skip
    store.team_tokens.add(token, f"hash-{token_id}", None)


def test_a_team_tokens_description_is_claimed_once_in_its_team_until_revoked(store: AccessStore) -> None:
    _team_token(store, "at-1", "team-a", "deploys")
    _team_token(store, "at-2", "team-a", None)  # legacy tokens claim nothing: any number may be stored
    _team_token(store, "at-3", "team-a", None)
    _team_token(store, "at-4", "team-b", "deploys")  # another team
    with pytest.raises(ValidationFailed, match="has already been taken"):
        _team_token(store, "at-5", "team-a", "deploys")
    assert store.accounts.lookup("hash-at-5") is None and store.accounts.tokens_of("team-a")[-1].id == "at-3"
    first = store.accounts.token("at-1")
    assert (first.named, first.description, first.created_by) == (True, "deploys", ("users", "user-a"))
    assert not store.accounts.token("at-2").named
    store.accounts.revoke("at-1")
    _team_token(store, "at-6", "team-a", "deploys")  # the revocation freed the description
    assert store.accounts.lookup("hash-at-6") is not None


def test_delete_all_of_revokes_the_organizations_team_tokens(store: AccessStore) -> None:
    org = _org(store, "acme")
    team = owners_team_id(org.key)
    _team_token(store, "at-1", team, "deploys")
    _team_token(store, "at-2", team, None)
    _team_token(store, "at-3", "team-elsewhere", "deploys")
    store.delete_all_of(organization="acme")
    assert store.accounts.tokens_of(team) == [] and store.accounts.lookup("hash-at-1") is None
    assert [t.id for t in store.accounts.tokens_of("team-elsewhere")] == ["at-3"]
