"""Identifier formats: `<kind>-<16 base58 chars>` like HCP Terraform (ws-, run-, sv-, cv-, ...)."""

from __future__ import annotations

import secrets

_ALPHABET = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"


def new_id(kind: str) -> str:
    return f"{kind}-" + "".join(secrets.choice(_ALPHABET) for _ in range(16))


def kind_of(identifier: str) -> str:
    return identifier.split("-", 1)[0]


def looks_like(identifier: str, kind: str) -> bool:
    prefix = f"{kind}-"
    rest = identifier[len(prefix) :]
    return identifier.startswith(prefix) and 0 < len(rest) <= 64 and all(c.isalnum() or c in "_-" for c in rest)
