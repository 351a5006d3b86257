"""An organization's token TTL policies (HCP Terraform's `token-ttl-policies`): per kind of token, the longest
lifetime one may be created with. Until a kind's policy is set, its maximum is the default (two years of 365.25
days) and nothing is capped: a token asked for without an expiry gets the default expiry (`tokens.default_expiry`).
Once set, an organization or team token of the organization asked for beyond it is refused, and one asked for
without an expiry expires at the earlier of the default expiry and the maximum."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from terrace.domain.errors import Invalid

TOKEN_TYPES = ("organization", "team", "user", "audit_trails")  # go-tfe's TokenType values
DEFAULT_MAX_TTL_MS = 63_113_904_000  # two years of 365.25 days, as HCP Terraform answers
MAX_TTL_MS_LIMIT = 100 * 365 * 86_400_000  # what a policy may name (a century)
_SETTING = "token-ttl-policy:"  # one organization setting per kind: changing one never rewrites another


@dataclass(frozen=True)
class TokenTTLPolicy:
    token_type: str
    max_ttl_ms: int
    created_at: str
    updated_at: str


def setting_key(token_type: str) -> str:
    return _SETTING + token_type


def policies(settings: dict[str, Any], created_at: str) -> list[TokenTTLPolicy]:
    """Every kind's policy (the default where none was set; its times are the organization's creation)."""
    found = []
    for kind in TOKEN_TYPES:
        stored = settings.get(setting_key(kind))
        if isinstance(stored, dict):
            found.append(TokenTTLPolicy(kind, int(stored["max_ttl_ms"]), stored["created_at"], stored["updated_at"]))
        else:
            found.append(TokenTTLPolicy(kind, DEFAULT_MAX_TTL_MS, created_at, created_at))
    return found


def check_update(raw: Any) -> dict[str, int]:
    """`token-ttl-policies` of an update: a non-empty list of `{token-type, max-ttl-ms}`, each kind once."""
    pointer = "/data/attributes/token-ttl-policies"
    if not isinstance(raw, list) or not raw:
        raise Invalid("token-ttl-policies must be a non-empty list", pointer=pointer)
    wanted: dict[str, int] = {}
    for entry in raw:
        kind = entry.get("token-type") if isinstance(entry, dict) else None
        ttl = entry.get("max-ttl-ms") if isinstance(entry, dict) else None
        if kind not in TOKEN_TYPES or kind in wanted:
            raise Invalid(f"token-type must be one of {', '.join(TOKEN_TYPES)}, each once", pointer=pointer)
        if isinstance(ttl, bool) or not isinstance(ttl, int) or not 0 < ttl <= MAX_TTL_MS_LIMIT:
            raise Invalid(
                f"max-ttl-ms must be a positive count of milliseconds up to {MAX_TTL_MS_LIMIT}", pointer=pointer
            )
        wanted[kind] = ttl
    return wanted


def capped_expiry(settings: dict[str, Any], token_type: str, now_s: float, expires_s: int, asked: bool) -> int:
    """The expiry (epoch seconds) of a token of `token_type` created at `now_s`: `expires_s` as asked (Invalid
    beyond the organization's policy) or the default one (capped at the policy)."""
    stored = settings.get(setting_key(token_type))
    if not isinstance(stored, dict):
        return expires_s
    latest = int(now_s + int(stored["max_ttl_ms"]) / 1000)
    if expires_s <= latest:
        return expires_s
    if asked:
        raise Invalid(
            f"this organization's {token_type} tokens live at most {int(stored['max_ttl_ms']) // 1000} seconds",
            pointer="/data/attributes/expired-at",
        )
    return latest
