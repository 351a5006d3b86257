"""Two first sign-ins of one person (same issuer and subject) that race: exactly one Terrace user survives and both
sign-ins get it. The race is made deterministic by a table that runs the competing sign-in to its end between the
loser's read of the link and its write, on each table: in-memory, the embedded server's SQLite, DynamoDB (moto)."""

from __future__ import annotations

from typing import Any

from terrace.adapters.table import Delete, Item, Table
from terrace.services.access.accounts import AccountService
from terrace.services.access.oidc import OidcConfig, OidcSignIn
from terrace.services.access.store_accounts import AccountStore
from terrace.services.access.store_sign_in import SignInStore, oidc_link_key
from terrace.services.access.web_sessions import WebSessionService

ISSUER = "https://idp.example.com"
CLAIMS = {"sub": "sub-race", "preferred_username": "rita", "email": "rita@example.com", "groups": ["ops"]}


class CompetingSignIn:
    """Delegates to `inner`; before the first write of a sign-in link, runs `competitor()` to its end."""

    def __init__(self, inner: Table) -> None:
        self.inner = inner
        self.competitor: Any = None

    def put(self, item: Item, **conditions: Any) -> None:
        if item["sk"] == "link" and self.competitor is not None:
            competitor, self.competitor = self.competitor, None
            competitor()
        self.inner.put(item, **conditions)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def sign_in_service(table: Any) -> tuple[OidcSignIn, AccountService]:
    accounts, sign_in = AccountService(AccountStore(table)), SignInStore(table)
    config = OidcConfig(ISSUER, "terrace", "secret", "https://terrace.example.com/app/sign-in/oidc/callback")
    return OidcSignIn(sign_in, accounts, WebSessionService(sign_in, accounts, "test-secret"), config), accounts


def users(table: Table) -> list[Item]:
    return table.query("users", index="gsi1")


def delete_user(table: Table, user_id: str) -> None:
    user = table.get(user_id, "user")
    assert user is not None
    table.transact([Delete(user_id, "user"), Delete(f"username#{user['username']}", "claim")])


def test_two_first_sign_ins_of_one_person_end_with_one_user(table: Table) -> None:
    racing = CompetingSignIn(table)
    loser, _ = sign_in_service(racing)
    winner, accounts = sign_in_service(table)
    won: list[str] = []
    racing.competitor = lambda: won.append(winner._user_for(CLAIMS))

    lost = loser._user_for(CLAIMS)

    assert won and lost == won[0]  # the loser uses the winner's link
    assert [u["id"] for u in users(table)] == [lost]  # the loser's own user is gone ...
    survivor = accounts.get_user(lost)
    assert survivor.username != "rita" and accounts.find_user("rita") is None  # the loser took "rita", then freed it
    assert accounts.user_id_of(survivor.username) == lost
    link = table.get(*oidc_link_key(ISSUER, "sub-race"))
    assert link is not None and link["user_id"] == lost and link["groups"] == ["ops"]


def test_a_link_to_a_deleted_user_is_replaced_once_when_two_sign_ins_race(table: Table) -> None:
    first, _ = sign_in_service(table)
    gone = first._user_for(CLAIMS)
    delete_user(table, gone)

    racing = CompetingSignIn(table)
    loser, _ = sign_in_service(racing)
    winner, _ = sign_in_service(table)
    won: list[str] = []
    racing.competitor = lambda: won.append(winner._user_for(CLAIMS))

    lost = loser._user_for(CLAIMS)

    assert won and lost == won[0] != gone
    assert [u["id"] for u in users(table)] == [lost]
    link = table.get(*oidc_link_key(ISSUER, "sub-race"))
    assert link is not None and link["user_id"] == lost


def test_a_sign_in_that_read_a_link_before_its_user_was_replaced_takes_the_new_user(table: Table) -> None:
    """The loser reads a good link; before it records the groups, the user is deleted and the person signs in
    again elsewhere (a new user, a new link). The loser's write must not point the link back at the deleted user."""
    first, _ = sign_in_service(table)
    old = first._user_for(CLAIMS)
    racing = CompetingSignIn(table)
    loser, _ = sign_in_service(racing)
    winner, _ = sign_in_service(table)
    won: list[str] = []

    def delete_then_sign_in_again() -> None:
        delete_user(table, old)
        won.append(winner._user_for({**CLAIMS, "groups": ["platform"]}))

    racing.competitor = delete_then_sign_in_again

    assert loser._user_for(CLAIMS) == won[0] != old
    assert [u["id"] for u in users(table)] == won
    link = table.get(*oidc_link_key(ISSUER, "sub-race"))
    assert link is not None and link["user_id"] == won[0] and link["groups"] == ["ops"]
