"""On each table (in-memory, the embedded server's SQLite, DynamoDB on moto): a user's web sessions are listed by
user, so a suspension, a revoked site-admin right and a deletion delete all of them and no one else's; and a
suspension that lands between a token's issuance reading the user and writing the token is not missed."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from terrace.adapters.table import Item, Put, Table, WriteOp
from terrace.domain.errors import Conflict
from terrace.domain.principal import PrincipalKind
from terrace.domain.web_sessions import WebSession
from terrace.services.access.accounts import AccountService
from terrace.services.access.store_accounts import AccountStore
from terrace.services.access.store_sign_in import SignInStore, session_key
from terrace.services.access.users import UserService
from terrace.services.access.web_sessions import WebSessionService


def stored(table: Table, session: WebSession) -> bool:
    return table.get(*session_key(session.id)) is not None


def test_suspension_revocation_and_deletion_delete_that_users_sessions(table: Table) -> None:
    accounts, sign_in = AccountService(AccountStore(table)), SignInStore(table)
    users = UserService(AccountStore(table), sign_in, accounts)
    sessions = WebSessionService(sign_in, accounts, "test-secret")
    alice, bob = accounts.create_user("alice"), accounts.create_user("bob")
    root, dave = accounts.create_user("root", site_admin=True), accounts.create_user("dave")
    made: dict[str, list[tuple[str, WebSession]]] = {}
    for user in (alice, bob, root, dave):
        secret = accounts.issue_token(PrincipalKind.USER, user.id).secret
        made[user.username] = [sessions.sign_in(secret), sessions.sign_in(secret)]
        made[user.username].append(sessions.sign_in_federated(user.id, "https://idp.example.com"))

    users.set_flags(alice.id, suspended=True)
    users.set_flags(root.id, site_admin=False)
    users.delete(dave.id)

    for name in ("alice", "root", "dave"):
        assert not any(stored(table, session) for _, session in made[name]), name
    assert all(stored(table, session) for _, session in made["bob"])
    assert all(sessions.resolve(cookie) is not None for cookie, _ in made["bob"])
    assert all(sessions.resolve(cookie) is None for name in ("alice", "root", "dave") for cookie, _ in made[name])


class SuspendedMeanwhile:
    """Delegates to `inner`; before the first transaction that writes a token, runs `meanwhile()` to its end."""

    def __init__(self, inner: Table) -> None:
        self.inner = inner
        self.meanwhile: Any = None

    def transact(self, ops: Sequence[WriteOp]) -> None:
        if self.meanwhile is not None and any(isinstance(op, Put) and op.item["sk"] == "token" for op in ops):
            meanwhile, self.meanwhile = self.meanwhile, None
            meanwhile()
        self.inner.transact(ops)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_a_suspension_between_reading_the_user_and_writing_the_token_refuses_it(table: Table) -> None:
    racing = SuspendedMeanwhile(table)
    accounts = AccountService(AccountStore(racing))  # type: ignore[arg-type]
    alice = accounts.create_user("alice")
    users = UserService(AccountStore(table), SignInStore(table), AccountService(AccountStore(table)))
    racing.meanwhile = lambda: users.set_flags(alice.id, suspended=True)

    with pytest.raises(Conflict, match="suspended"):
        accounts.issue_token(PrincipalKind.USER, alice.id)

    tokens: list[Item] = table.query(f"{alice.id}#tokens", index="gsi1")
    assert tokens == []
