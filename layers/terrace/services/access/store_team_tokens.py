"""Storage of teams' described API tokens (part of the access store, `store.py`).

A described team token is a token `at-…`/`token` with its lookup, as every token (`store_accounts.py`), written in
one transaction with the claim of its description in its team, `<team>#tokendesc`/<sha256 of the description>: a
second token of the same description loses that write. The token item names its claim (`claim`), and revoking the
token (`AccountStore.revoke`) deletes it with the token, so the description is free again."""

from __future__ import annotations

import hashlib

from terrace.adapters.table import ConditionFailed, Put, Table
from terrace.domain.errors import ValidationFailed
from terrace.domain.tokens import Token
from terrace.services.access.store_token_items import token_items


def description_claim_key(team_id: str, description: str) -> tuple[str, str]:
    return f"{team_id}#tokendesc", hashlib.sha256(description.encode()).hexdigest()


class TeamTokenStore:
    def __init__(self, table: Table) -> None:
        self._table = table

    def add(self, token: Token, token_hash: str, expires_epoch: int | None) -> None:
        """Store a team token and its lookup, and a described one's claim of its description; ValidationFailed when
        the team has a token of that description already."""
        item, lookup = token_items(token, token_hash, expires_epoch)
        ops = [Put(item, if_absent=True), Put(lookup, if_absent=True)]
        if token.named:
            pk, sk = description_claim_key(token.subject_id, token.description)
            item["claim"] = [pk, sk]
            ops.append(Put({"pk": pk, "sk": sk, "token_id": token.id}, if_absent=True))
        try:
            self._table.transact(ops)
        except ConditionFailed as exc:
            raise ValidationFailed("Validation failed: Description has already been taken",
                                   pointer="/data/attributes/description") from exc  # fmt: skip
