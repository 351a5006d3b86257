"""Tokens: stored only as hashes, one read to authenticate, expiry and revocation take effect at once."""

from __future__ import annotations

import pytest
from terrace.adapters.memory_table import MemoryTable
from terrace.bootstrap import build_memory
from terrace.domain.errors import Unauthenticated
from terrace.domain.principal import PrincipalKind


class CountingTable(MemoryTable):
    def __init__(self) -> None:
        super().__init__()
        self.gets = 0

    def get(self, pk: str, sk: str):  # type: ignore[no-untyped-def]
        self.gets += 1
        return super().get(pk, sk)


def test_token_is_hashed_and_authenticates_in_one_read() -> None:
    container = build_memory()
    table = CountingTable()
    container.table = table
    user = container.accounts.create_user("bob", "bob@example.com", site_admin=True)
    issued = container.accounts.issue_token(PrincipalKind.USER, user.id, description="laptop")
    assert issued.secret not in repr(table._items)
    table.gets = 0
    principal = container.accounts.authenticate(issued.secret)
    assert table.gets == 1
    assert (principal.subject_id, principal.username, principal.site_admin) == (user.id, "bob", True)


def test_expired_revoked_and_unknown_tokens_are_refused() -> None:
    container = build_memory()
    accounts = container.accounts
    expired = accounts.issue_token(PrincipalKind.RUN, "run-x", organization="acme", workspace_id="ws-x", ttl_s=-1)
    with pytest.raises(Unauthenticated):
        accounts.authenticate(expired.secret)
    user = accounts.create_user("carol")
    issued = accounts.issue_token(PrincipalKind.USER, user.id)
    assert accounts.authenticate(issued.secret).username == "carol"
    accounts.revoke_token(issued.token.id)
    for raw in (issued.secret, "nope", ""):
        with pytest.raises(Unauthenticated):
            accounts.authenticate(raw)
