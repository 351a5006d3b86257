"""The private provider registry: a provider (organization, namespace, name), its versions and their platforms,
and the GPG keys that sign a version's `SHA256SUMS`.

A private provider's namespace is its organization's name; a `public` entry only points at a public registry's
provider (no versions here). A version names the key that signed its checksums (`key-id`) and the plugin protocols
it speaks; a platform (os, arch) names its zip's file name and SHA-256. Files (`SHA256SUMS`, `SHA256SUMS.sig`,
each platform's zip) are uploaded to single-use URLs and served behind short-lived signed URLs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from terrace.domain.errors import Invalid
from terrace.domain.registry_modules import PRIVATE, PUBLIC, check_namespace, check_version

__all__ = ["PRIVATE", "PUBLIC", "check_namespace", "check_version"]

# the public registry's rule for a provider's type name (`terraform-provider-<name>`)
_NAME = re.compile(r"^[0-9A-Za-z](?:[0-9A-Za-z_-]{0,62}[0-9A-Za-z])?\Z")
_PLATFORM_PART = re.compile(r"^[0-9A-Za-z_-]{1,64}\Z")
_FILENAME = re.compile(r"^[0-9A-Za-z._+-]{1,255}\Z")
_PROTOCOL = re.compile(r"^\d{1,3}\.\d{1,3}\Z")
_KEY_ID = re.compile(r"^[0-9A-Za-z_-]{1,64}\Z")
PROTOCOLS_MAX = 8
SHASUM_MAX = 128

SHASUMS_MAX_BYTES = 256 * 1024  # SHA256SUMS: a line per platform
SIGNATURE_MAX_BYTES = 64 * 1024  # SHA256SUMS.sig: one detached signature
BINARY_MAX_BYTES = 512 * 1024 * 1024  # a platform's zip
ARMOR_MAX_CHARS = 256 * 1024  # a GPG key's ASCII armor


@dataclass(frozen=True)
class ProviderPlatform:
    id: str
    version_id: str
    os: str
    arch: str
    filename: str
    shasum: str
    blob_key: str
    created_at: str
    uploaded: bool = False
    error: str | None = None  # why the last uploaded zip was refused


@dataclass(frozen=True)
class ProviderVersion:
    id: str
    provider_id: str
    version: str
    key_id: str
    protocols: tuple[str, ...]
    created_at: str
    updated_at: str
    shasums_key: str
    signature_key: str
    shasums_uploaded: bool = False
    signature_uploaded: bool = False


@dataclass(frozen=True)
class RegistryProvider:
    id: str
    organization: str  # the storage key of the organization
    organization_name: str
    registry_name: str
    namespace: str
    name: str
    created_at: str
    updated_at: str
    versions: tuple[ProviderVersion, ...] = field(default=())
    can_manage: bool = False  # whether the caller who read it may change it (its `permissions`)

    @property
    def address(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True)
class GPGKey:
    id: str
    organization: str  # the storage key of the organization whose namespace holds it
    namespace: str  # the organization's name
    key_id: str  # the key's 64-bit key ID, 16 upper-case hex digits
    ascii_armor: str
    created_at: str
    updated_at: str


def check_provider_name(value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise Invalid("name is required", pointer="/data/attributes/name")
    if not _NAME.match(value):
        raise Invalid(
            "name must be 1 to 64 letters, digits, '-' or '_', starting and ending with a letter or digit",
            pointer="/data/attributes/name",
        )
    return value


def check_registry_name(value: Any) -> str:
    """HCP Terraform's answer, word for word: go-tfe's tests compare it (two errors when the name is missing)."""
    if value in (None, ""):
        raise Invalid("Registry name can't be blank", pointer="/data/attributes/registry-name", also=(
            "Registry name is not included in the list",))  # fmt: skip
    if value not in (PRIVATE, PUBLIC):
        raise Invalid("Registry name is not included in the list", pointer="/data/attributes/registry-name")
    return str(value)


def check_key_id(value: Any) -> str:
    if not isinstance(value, str) or not _KEY_ID.match(value):
        raise Invalid(
            "key-id must name a GPG key (up to 64 letters, digits, '-' or '_')", pointer="/data/attributes/key-id"
        )
    return value


def check_protocols(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if (
        not isinstance(value, list)
        or len(value) > PROTOCOLS_MAX
        or not all(isinstance(p, str) and _PROTOCOL.match(p) for p in value)
    ):
        raise Invalid(
            f'protocols must be a list of at most {PROTOCOLS_MAX} plugin protocol versions such as "5.0"',
            pointer="/data/attributes/protocols",
        )
    return tuple(dict.fromkeys(value))


def check_platform(attrs: dict[str, Any]) -> tuple[str, str, str, str]:
    """(os, arch, filename, shasum) of a platform to create."""
    found = []
    for name, rule in (("os", _PLATFORM_PART), ("arch", _PLATFORM_PART), ("filename", _FILENAME)):
        value = attrs.get(name)
        if not isinstance(value, str) or not value:
            raise Invalid(f"{name} is required", pointer=f"/data/attributes/{name}")
        if not rule.match(value) or value in (".", ".."):
            raise Invalid(f"{name} has characters a {name} may not have", pointer=f"/data/attributes/{name}")
        found.append(value)
    shasum = attrs.get("shasum")
    if not isinstance(shasum, str) or not shasum:
        raise Invalid("shasum is required", pointer="/data/attributes/shasum")
    if len(shasum) > SHASUM_MAX or not shasum.isalnum():
        raise Invalid("shasum must be the zip's SHA-256 in hexadecimal", pointer="/data/attributes/shasum")
    return found[0], found[1], found[2], shasum
