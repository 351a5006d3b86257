"""A token's last use: recorded by authentication at most once per period, with a write conditional on the lookup
read, so a busy token costs one write per period and a revoked or changed token is never written back."""

from __future__ import annotations

import pytest
from table_writes import spy_writes
from terrace.bootstrap import build_memory
from terrace.domain import clock
from terrace.domain.errors import Unauthenticated
from terrace.domain.principal import PrincipalKind
from terrace.services.access.accounts import LAST_USED_EVERY_S, hash_token


def _setup() -> tuple[object, str, str]:
    container = build_memory()
    user = container.accounts.create_user("alice")
    issued = container.accounts.issue_token(PrincipalKind.USER, user.id, description="ci")
    return container, issued.secret, issued.token.id


def test_the_first_use_is_recorded_then_no_write_until_the_period_ends(monkeypatch: pytest.MonkeyPatch) -> None:
    container, secret, token_id = _setup()
    assert container.accounts.get_token(token_id).last_used_at is None
    writes = spy_writes(container.table, monkeypatch)
    container.accounts.authenticate(secret)
    recorded = len(writes)
    assert recorded > 0
    first = container.accounts.get_token(token_id).last_used_at
    assert first and [
        t.last_used_at for t in container.accounts.list_tokens(container.accounts.find_user("alice").id)
    ] == [first]
    for _ in range(20):
        container.accounts.authenticate(secret)
    assert len(writes) == recorded  # a busy token: no write per request

    now = clock.epoch()
    monkeypatch.setattr(clock, "epoch", lambda: now + LAST_USED_EVERY_S + 1)
    container.accounts.authenticate(secret)
    assert len(writes) > recorded


def test_a_session_page_is_not_a_use_of_the_token(monkeypatch: pytest.MonkeyPatch) -> None:
    container, secret, _ = _setup()
    writes = spy_writes(container.table, monkeypatch)
    container.accounts.authenticate_hash(hash_token(secret))
    assert writes == []


def test_a_use_racing_a_revocation_never_brings_the_token_back(monkeypatch: pytest.MonkeyPatch) -> None:
    container, secret, token_id = _setup()
    table = container.table
    original_get = table.get

    def revoked_after_the_read(pk: str, sk: str) -> object:
        item = original_get(pk, sk)
        if sk == "lookup":
            container.accounts.revoke_token(token_id)  # between authentication's read and its write
        return item

    monkeypatch.setattr(table, "get", revoked_after_the_read)
    container.accounts.authenticate(secret)  # this request was authenticated by the read; its use is not recorded
    monkeypatch.undo()
    with pytest.raises(Unauthenticated):
        container.accounts.authenticate(secret)
    assert table.get(f"tokenhash#{hash_token(secret)}", "lookup") is None


def test_a_use_racing_a_suspension_never_restores_the_old_flags(monkeypatch: pytest.MonkeyPatch) -> None:
    container, secret, _ = _setup()
    user = container.accounts.find_user("alice")
    table = container.table
    original_get = table.get
    done = []

    def suspended_after_the_read(pk: str, sk: str) -> object:
        item = original_get(pk, sk)
        if sk == "lookup" and not done:
            done.append(1)
            container.users.set_flags(user.id, suspended=True)  # refresh_lookups rewrites the lookup
        return item

    monkeypatch.setattr(table, "get", suspended_after_the_read)
    container.accounts.authenticate(secret)
    monkeypatch.undo()
    with pytest.raises(Unauthenticated, match="suspended"):
        container.accounts.authenticate(secret)
