"""Hold Your Own Key (HCP Terraform's HYOK) and the OIDC configurations it reaches a customer's key with.

An OIDC configuration names how a run (or the server's key test) gets credentials from a cloud with Terrace's
workload identity token: an AWS role, an Azure app, a GCP service account, a Vault role. A HYOK configuration
names a customer's key-encryption key (`kek-id`: a KMS key ARN or alias, or a key of the embedded server's key
file), the OIDC configuration that reaches it and the agent pool whose agents do the runs. Its status follows
`STATUSES`; a test (`test_succeeded` / `test_failed`) wraps a fresh data key with the customer's key. Each version of
the customer's key that wrapped a data key is a customer key version; revoking one makes the data keys it wrapped
unusable (`KeyVersion.usable`). The rules here are pure; `services/hyok/` stores and checks permissions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from terrace.domain.errors import BadRequest, Invalid, TransitionNotAllowed
from terrace.domain.limits import TEXT_ATTRIBUTE_MAX, text


@dataclass(frozen=True)
class OidcKind:
    kind: str  # aws, azure, gcp, vault
    type: str  # the JSON:API type
    prefix: str  # the id prefix HCP Terraform uses
    required: tuple[str, ...]
    optional: tuple[str, ...] = ()

    @property
    def attributes(self) -> tuple[str, ...]:
        return self.required + self.optional


OIDC_KINDS: dict[str, OidcKind] = {
    k.kind: k
    for k in (
        OidcKind("aws", "aws-oidc-configurations", "awsoidc", ("role-arn",)),
        OidcKind("azure", "azure-oidc-configurations", "azoidc", ("client-id", "subscription-id", "tenant-id")),
        OidcKind(
            "gcp",
            "gcp-oidc-configurations",
            "gcpoidc",
            ("service-account-email", "project-number", "workload-provider-name"),
        ),
        OidcKind(
            "vault",
            "vault-oidc-configurations",
            "voidc",
            ("address", "role"),
            ("namespace", "auth-path", "encoded-cacert"),
        ),
    )
}
BY_TYPE = {k.type: k for k in OIDC_KINDS.values()}
BY_PREFIX = {k.prefix: k for k in OIDC_KINDS.values()}
CACERT_MAX = 64 * 1024  # a PEM bundle, base64

# HCP Terraform's statuses of a HYOK configuration and what may follow each
UNTESTED, TESTING, TEST_FAILED, AVAILABLE, ERRORED, REVOKING, REVOKED = (
    "untested", "testing", "test_failed", "available", "errored", "revoking", "revoked",
)  # fmt: skip
STATUSES = (UNTESTED, TESTING, TEST_FAILED, AVAILABLE, ERRORED, REVOKING, REVOKED)
REVOCABLE = (UNTESTED, TEST_FAILED, AVAILABLE, ERRORED)
DELETABLE = (UNTESTED, TEST_FAILED, ERRORED, REVOKED)  # never one that may still secure a workspace
KEY_AVAILABLE, KEY_REVOKING, KEY_REVOKED, KEY_REVOCATION_FAILED = (
    "available", "revoking", "revoked", "revocation_failed",
)  # fmt: skip


@dataclass
class OidcConfiguration:
    id: str
    organization: str  # the organization's storage key
    kind: str
    attributes: dict[str, str]
    created_at: str
    version: int = 1

    @property
    def type(self) -> str:
        return OIDC_KINDS[self.kind].type


@dataclass
class HyokConfiguration:
    id: str
    organization: str
    name: str
    kek_id: str
    kms_options: dict[str, str]
    oidc_configuration_id: str
    agent_pool_id: str
    created_at: str
    status: str = UNTESTED
    error: str | None = None
    primary: bool = False
    version: int = 1

    @property
    def oidc_kind(self) -> OidcKind:
        return BY_PREFIX[self.oidc_configuration_id.split("-", 1)[0]]


@dataclass
class KeyVersion:
    """A version of the customer's key (`key_version`: what the key service reports, e.g. KMS's key ARN)."""

    id: str
    organization: str
    hyok_configuration_id: str
    key_version: str
    created_at: str
    status: str = KEY_AVAILABLE
    error: str = ""
    workspaces_secured: int = 0
    version: int = 1

    @property
    def usable(self) -> bool:
        return self.status == KEY_AVAILABLE


@dataclass
class EncryptedDataKey:
    """A data key wrapped by a customer key version; Terrace stores only the wrapped form (`encrypted_dek`)."""

    id: str
    organization: str
    key_version_id: str
    customer_key_name: str
    encrypted_dek: str
    created_at: str
    context: dict[str, str] = field(default_factory=dict)


def oidc_attributes(kind: OidcKind, attrs: dict[str, Any], current: dict[str, str] | None = None) -> dict[str, str]:
    """The attributes of a new configuration (`current` None: every required one) or of an update of `current`
    (only those sent change; a required one may not be emptied). Unknown attributes are refused."""
    unknown = sorted(set(attrs) - set(kind.attributes))
    if unknown:
        raise Invalid(f"{unknown[0]} is not an attribute of {kind.type}", pointer=f"/data/attributes/{unknown[0]}")
    values = dict(current or {})
    for name in kind.attributes:
        if name in attrs and attrs[name] is not None:
            limit = CACERT_MAX if name == "encoded-cacert" else TEXT_ATTRIBUTE_MAX
            values[name] = text(attrs[name], name, limit).strip()
    for name in kind.required:
        if not values.get(name):
            raise Invalid(f"{name} is required for {kind.type}", pointer=f"/data/attributes/{name}")
    return values


KMS_OPTIONS = ("key-region", "key-location", "key-ring-id")
AWS_REGION = re.compile(r"[a-z]{2}(-[a-z]+)+-\d{1,2}")  # the key's region names the KMS endpoint Terrace calls


def kms_options(kind: OidcKind, raw: Any, current: dict[str, str] | None = None) -> dict[str, str]:
    """`kms-options` for a configuration reaching its key through `kind`: AWS needs the key's region, GCP its
    location and key ring; the others take none."""
    if raw is not None and not isinstance(raw, dict):
        raise Invalid("kms-options must be an object", pointer="/data/attributes/kms-options")
    values = dict(current or {}) if raw is None else {}
    for name, value in (raw or {}).items():
        if name not in KMS_OPTIONS:
            raise Invalid(f"kms-options has no {name}", pointer="/data/attributes/kms-options")
        if value:
            values[name] = text(value, f"kms-options/{name}", TEXT_ATTRIBUTE_MAX).strip()
    region = values.get("key-region")
    if kind.kind == "aws" and region and not AWS_REGION.fullmatch(region):
        raise Invalid(
            "kms-options.key-region must be an AWS region (us-east-1)", pointer="/data/attributes/kms-options"
        )
    needed = {"aws": ("key-region",), "gcp": ("key-location", "key-ring-id")}.get(kind.kind, ())
    for name in needed:
        if not values.get(name):
            raise Invalid(
                f"kms-options.{name} is required with a {kind.type[:-1]}", pointer="/data/attributes/kms-options"
            )
    return {k: v for k, v in values.items() if k in needed}


def required_text(attrs: dict[str, Any], name: str, *, limit: int = TEXT_ATTRIBUTE_MAX) -> str:
    value = text(attrs.get(name) or "", name, limit).strip()
    if not value:
        raise Invalid(f"{name} is required for a HYOK configuration", pointer=f"/data/attributes/{name}")
    return value


def revoke(hyok: HyokConfiguration) -> None:
    if hyok.status == REVOKED:
        return
    if hyok.status not in REVOCABLE:
        raise TransitionNotAllowed(f"a HYOK configuration that is {hyok.status} cannot be revoked")
    hyok.status = REVOKED


def check_deletable(hyok: HyokConfiguration) -> None:
    if hyok.status not in DELETABLE:
        raise TransitionNotAllowed(f"a HYOK configuration that is {hyok.status} cannot be deleted: revoke it first")


def check_key_version_revocable(key: KeyVersion) -> None:
    if key.status == KEY_REVOKED:
        raise TransitionNotAllowed(f"key version {key.id} is already revoked")


def check_key_version_deletable(key: KeyVersion) -> None:
    if key.status != KEY_REVOKED:
        raise TransitionNotAllowed(f"key version {key.id} must be revoked before it is deleted")


def check_enabling(key: str, value: Any, enabled: bool) -> bool:
    """`hyok-enabled` of a workspace: once true it stays true (its state is ciphertext only its agents open)."""
    if not isinstance(value, bool):
        raise Invalid(f"{key} must be true or false", pointer=f"/data/attributes/{key}")
    if enabled and not value:  # HCP's answer, word for word (go-tfe's tests compare it)
        raise BadRequest("hyok may not be disabled once it has been turned on for a workspace")
    return value
