"""SSH keys of an organization (the private key is stored encrypted and never shown)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from terrace.domain import limits
from terrace.domain.errors import Invalid

NAME_MAX = 255

VALUE_MAX_BYTES = 4096  # one KMS Encrypt call; an RSA-4096 private key is about 3.3 KB


@dataclass(frozen=True)
class SSHKey:
    id: str
    organization: str
    name: str
    created_at: str


def check_name(attrs: dict[str, Any]) -> str:
    value = attrs.get("name")
    if not isinstance(value, str) or not value.strip():
        raise Invalid("name is required: a non-empty string", pointer="/data/attributes/name")
    return limits.text(value, "name", NAME_MAX)


def check_value(attrs: dict[str, Any]) -> str:
    value = attrs.get("value")
    if not isinstance(value, str) or not value.strip():
        raise Invalid("value is required: the private key", pointer="/data/attributes/value")
    if len(value.encode()) > VALUE_MAX_BYTES or "\x00" in value:
        raise Invalid(
            f"value must be a private key of at most {VALUE_MAX_BYTES} bytes", pointer="/data/attributes/value"
        )
    return value
