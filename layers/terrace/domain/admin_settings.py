"""The installation's settings a site admin changes through TFE's admin API (`/api/v2/admin/*-settings`): one
section each (general, cost estimation, customization, SAML, SMTP, Twilio, SCIM), its defaults, the rule for each
attribute, and which attributes are secrets (write-only: stored sealed, never returned, never logged).

`checked(section, stored, attrs)` answers the new values of a section from the stored ones and a PATCH's
attributes (unknown attributes are ignored, as TFE does; a bad value is a 422 naming it)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from terrace.domain import limits
from terrace.domain.errors import Invalid

DURATION_RE = re.compile(r"^(?=\d)(\d+h)?(\d+m)?(\d+s)?\Z")
SIGNATURE_METHODS = ("SHA1", "SHA256")
SAML_PROVIDERS = ("okta", "entra", "saml", "unknown")
SMTP_AUTH = ("none", "plain", "login")
LONG_TEXT_MAX = 8192  # customization HTML fragments

Check = Callable[[str, Any], Any]


def _pointer(key: str) -> str:
    return f"/data/attributes/{key}"


def _bool(key: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise Invalid(f"{key} must be true or false", pointer=_pointer(key))
    return value


def _count(low: int, high: int) -> Check:
    def check(key: str, value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise Invalid(f"{key} must be a whole number from {low} to {high}", pointer=_pointer(key))
        return value

    return check


def _text(max_chars: int) -> Check:
    def check(key: str, value: Any) -> str:
        return limits.text("" if value is None else value, key, max_chars)

    return check


def _one_of(choices: tuple[str, ...]) -> Check:
    def check(key: str, value: Any) -> str:
        if value not in choices:
            raise Invalid(f"{key} must be one of {', '.join(choices)}", pointer=_pointer(key))
        return str(value)

    return check


def _duration(key: str, value: Any) -> str:
    if value == "":
        return value
    if not isinstance(value, str) or not DURATION_RE.match(value):
        raise Invalid(f"{key} must be a duration such as 2h or 30m", pointer=_pointer(key))
    return value


def _email(key: str, value: Any) -> str:
    address = limits.text("" if value is None else value, key, limits.EMAIL_MAX)
    if address and ("@" not in address.strip("@") or any(c.isspace() for c in address)):
        raise Invalid(f"{key} must be an e-mail address", pointer=_pointer(key))
    return address


TEXT = _text(limits.TEXT_ATTRIBUTE_MAX)
SECRET = _text(16384)

# section -> attribute -> (default, check)
SECTIONS: dict[str, dict[str, tuple[Any, Check]]] = {
    "general": {
        "limit-user-organization-creation": (False, _bool),
        "api-rate-limiting-enabled": (False, _bool),
        "api-rate-limit": (30, _count(1, 100_000)),
        "send-passing-statuses-for-untriggered-speculative-plans": (False, _bool),
        "allow-speculative-plans-on-pull-requests-from-forks": (False, _bool),
        "require-two-factor-for-admins": (False, _bool),
        "fair-run-queuing-enabled": (True, _bool),
        "limit-organizations-per-user": (False, _bool),
        "default-organizations-per-user-ceiling": (10, _count(1, 100_000)),
        "limit-workspaces-per-organization": (False, _bool),
        "default-workspaces-per-organization-ceiling": (100, _count(1, 10_000_000)),
        # "": no limit of the admin's, the deployment's phase deadline alone (the run reaper applies the shorter)
        "terraform-build-worker-apply-timeout": ("", _duration),
        "terraform-build-worker-plan-timeout": ("", _duration),
        "apply-timeout": ("", _duration),
        "plan-timeout": ("", _duration),
        "default-remote-state-access": (False, _bool),  # Terrace's default: a workspace shares its state with none
    },
    "cost-estimation": {
        "enabled": (True, _bool),
        "aws-access-key-id": ("", TEXT),
        "aws-secret-key": ("", SECRET),
        "aws-enabled": (False, _bool),
        "aws-instance-profile-enabled": (False, _bool),
        "gcp-credentials": ("", SECRET),
        "gcp-enabled": (False, _bool),
        "azure-enabled": (False, _bool),
        "azure-client-id": ("", TEXT),
        "azure-client-secret": ("", SECRET),
        "azure-subscription-id": ("", TEXT),
        "azure-tenant-id": ("", TEXT),
    },
    "customization": {
        "support-email-address": ("", _email),
        "login-help": ("", _text(LONG_TEXT_MAX)),
        "footer": ("", _text(LONG_TEXT_MAX)),
        "error": ("", _text(LONG_TEXT_MAX)),
        "new-user": ("", _text(LONG_TEXT_MAX)),
    },
    "saml": {
        "enabled": (False, _bool),
        "debug": (False, _bool),
        "authn-requests-signed": (False, _bool),
        "want-assertions-signed": (False, _bool),
        "team-management-enabled": (False, _bool),
        "idp-cert": ("", SECRET),
        "old-idp-cert": ("", SECRET),
        "slo-endpoint-url": ("", TEXT),
        "sso-endpoint-url": ("", TEXT),
        "attr-username": ("Username", TEXT),
        "attr-groups": ("MemberOf", TEXT),
        "attr-site-admin": ("SiteAdmin", TEXT),
        "site-admin-role": ("site-admins", TEXT),
        "sso-api-token-session-timeout": (1209600, _count(300, 31_536_000)),
        "certificate": ("", SECRET),
        "private-key": ("", SECRET),
        "signature-signing-method": ("SHA256", _one_of(SIGNATURE_METHODS)),
        "signature-digest-method": ("SHA256", _one_of(SIGNATURE_METHODS)),
        "provider-type": ("unknown", _one_of(SAML_PROVIDERS)),
    },
    "smtp": {
        "enabled": (False, _bool),
        "host": ("", TEXT),
        "port": (25, _count(1, 65535)),
        "sender": ("", _email),
        "auth": ("none", _one_of(SMTP_AUTH)),
        "username": ("", TEXT),
        "password": ("", SECRET),
    },
    "twilio": {
        "enabled": (False, _bool),
        "account-sid": ("", TEXT),
        "auth-token": ("", SECRET),
        "from-number": ("", TEXT),
    },
    "scim": {
        "enabled": (False, _bool),
        "paused": (False, _bool),
        "site-admin-group-scim-id": ("", TEXT),
    },
}

# write-only attributes: sealed at rest, never in an answer (the certificates are public, the rest is not)
SECRETS: dict[str, frozenset[str]] = {
    "cost-estimation": frozenset({"aws-secret-key", "gcp-credentials", "azure-client-secret"}),
    "saml": frozenset({"private-key"}),
    "smtp": frozenset({"password"}),
    "twilio": frozenset({"auth-token"}),
}
READ_ONLY: dict[str, frozenset[str]] = {"saml": frozenset({"old-idp-cert"})}


def defaults(section: str) -> dict[str, Any]:
    return {key: default for key, (default, _check) in SECTIONS[section].items()}


def checked(section: str, stored: dict[str, Any], attrs: dict[str, Any]) -> dict[str, Any]:
    """The section's values after a PATCH of `attrs` over `stored` (absent keys keep their value; null clears a
    text attribute to its default)."""
    values = {**defaults(section), **stored}
    for key, (default, check) in SECTIONS[section].items():
        if key not in attrs or key in READ_ONLY.get(section, frozenset()):
            continue
        value = attrs[key]
        values[key] = default if value is None and isinstance(default, str) else check(key, value)
    if section == "general":  # TFE's two names of each timeout are one setting
        for old, new in (("terraform-build-worker-apply-timeout", "apply-timeout"),
                         ("terraform-build-worker-plan-timeout", "plan-timeout")):  # fmt: skip
            if new in attrs:
                values[old] = values[new]
            elif old in attrs:
                values[new] = values[old]
    if section == "saml" and "idp-cert" in attrs and values["idp-cert"] != stored.get("idp-cert", ""):
        values["old-idp-cert"] = stored.get("idp-cert", "")  # kept until revoked (a rotation at the IdP)
    if section == "smtp" and values["enabled"] and not values["host"]:
        raise Invalid("host is needed to enable SMTP", pointer=_pointer("host"))
    return values


def public(section: str, values: dict[str, Any]) -> dict[str, Any]:
    """What an answer shows: every attribute but the secrets (an empty string in their place)."""
    hidden = SECRETS.get(section, frozenset())
    return {
        key: ("" if key in hidden else values.get(key, default)) for key, (default, _c) in SECTIONS[section].items()
    }


def seconds(duration: str) -> int:
    """`2h30m` -> 9000."""
    match = DURATION_RE.match(duration)
    if not match:
        raise ValueError(duration)
    units = (3600, 60, 1)
    return sum(int(part[:-1]) * unit for part, unit in zip(match.groups(), units, strict=True) if part)
