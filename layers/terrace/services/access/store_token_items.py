"""A token's items in the access store (`store_accounts.py` writes them, `store_team_tokens.py` too): the token
`at-…`/`token` (listed under gsi1 `<subject>#tokens`, oldest first) and its lookup `tokenhash#<sha256>`/`lookup`,
which carries the whole principal so that authenticating a request is one read; and what a lookup says when read."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from terrace.adapters.table import Delete, WriteOp
from terrace.domain.errors import Unauthenticated
from terrace.domain.principal import Principal, PrincipalKind
from terrace.domain.tokens import Token


def token_key(token_id: str) -> tuple[str, str]:
    return token_id, "token"


def lookup_key(token_hash: str) -> tuple[str, str]:
    return f"tokenhash#{token_hash}", "lookup"


def tokens_index(subject_id: str) -> str:
    return f"{subject_id}#tokens"


def revocation(token_id: str, token_hash: str) -> list[WriteOp]:
    """The writes that revoke a token, in one transaction: its lookup (what authenticates) and the token go
    together (missing ones are fine: a token revoked twice)."""
    return [Delete(*lookup_key(token_hash)), Delete(*token_key(token_id))]


def token_from_item(item: dict[str, Any]) -> Token:
    return Token(
        id=item["id"],
        kind=PrincipalKind(item["kind"]),
        subject_id=item["subject_id"],
        description=item.get("description", ""),
        created_at=item["created_at"],
        last_used_at=item.get("last_used_at"),
        expires_at=item.get("expires_at_iso"),
        organization=item.get("organization"),
        workspace_id=item.get("workspace_id"),
        named=bool(item.get("named")),
        created_by=(item["created_by_type"], item["created_by_id"]) if item.get("created_by_type") else None,
    )


def token_items(token: Token, token_hash: str, expires_epoch: int | None) -> tuple[dict[str, Any], dict[str, Any]]:
    """A token's item and its lookup, the item that authenticates (it carries the principal)."""
    item: dict[str, Any] = {"pk": token.id, "sk": "token", "id": token.id, "kind": token.kind.value,
                            "subject_id": token.subject_id, "description": token.description,
                            "created_at": token.created_at, "hash": token_hash,
                            "gsi1pk": tokens_index(token.subject_id),
                            "gsi1sk": token.created_at + token.id}  # fmt: skip
    if token.organization:
        item["organization"] = token.organization
    if token.workspace_id:
        item["workspace_id"] = token.workspace_id
    if token.named:
        item["named"] = True
    if token.created_by:
        item["created_by_type"], item["created_by_id"] = token.created_by
    if expires_epoch is not None:
        item["expires_at"], item["expires_at_iso"] = expires_epoch, token.expires_at
    pk, sk = lookup_key(token_hash)
    lookup: dict[str, Any] = {"pk": pk, "sk": sk, "token_id": token.id, "version": 1}
    lookup.update(
        {k: item[k] for k in ("kind", "subject_id", "organization", "workspace_id", "expires_at") if k in item}
    )
    return item, lookup


@dataclass(frozen=True)
class TokenLookup:
    """A token's lookup item as read: what authenticates a request, and the last use recorded on it."""

    token_id: str
    expires_at: int | None
    last_used_epoch: float
    version: int | None
    item: dict[str, Any] = field(repr=False, compare=False)

    def principal(self) -> Principal:
        """The caller this token acts as; Unauthenticated for a suspended user's."""
        lookup = self.item
        kind = PrincipalKind(lookup["kind"])
        if kind is PrincipalKind.USER and lookup.get("suspended"):
            raise Unauthenticated("this user is suspended")
        if kind is PrincipalKind.USER:
            return Principal(
                kind,
                lookup["subject_id"],
                lookup["username"],
                token_id=lookup["token_id"],
                site_admin=bool(lookup.get("site_admin")),
                site_auditor=bool(lookup.get("site_auditor")),
            )
        return Principal(
            kind,
            lookup["subject_id"],
            f"api-{kind.value}-{lookup['subject_id']}",
            token_id=lookup["token_id"],
            organization=lookup.get("organization"),
            workspace_id=lookup.get("workspace_id"),
        )


def lookup_from_item(item: dict[str, Any]) -> TokenLookup:
    expires = item.get("expires_at")
    return TokenLookup(item["token_id"], None if expires is None else int(expires),
                       float(item.get("last_used_epoch", 0)), item.get("version"), item)  # fmt: skip
