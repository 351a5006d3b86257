"""The provider registry protocol (`providers.v1`): what `terraform init` and `tofu init` ask for a provider
`<host>/<organization>/<name>`.

A version is offered once it can be installed: its `SHA256SUMS` and `SHA256SUMS.sig` landed, and a platform's zip
too (only those platforms are listed). A download answers short-lived signed URLs of the zip and both files (each
checked against its record first) and the armor of the namespace's GPG key the version names, with which the client
verifies the signature; a version whose key is not (or no longer) one of the namespace's is not served.
"""

from __future__ import annotations

import builtins
from typing import Any

from terrace.adapters.blobs import BlobStore
from terrace.config import Settings
from terrace.domain.errors import NotFound, TransitionNotAllowed
from terrace.domain.principal import Principal
from terrace.domain.registry_providers import PRIVATE, ProviderPlatform, ProviderVersion, RegistryProvider
from terrace.services.access.authz import Action
from terrace.services.blob_records import require_recorded
from terrace.services.registry.gpg_keys import GPGKeyService
from terrace.services.registry.provider_platforms import ProviderPlatformService
from terrace.services.registry.provider_versions import ProviderVersionService

DOWNLOAD_TTL_S = 300  # terraform fetches the three URLs at once


class ProviderDownloadService:
    def __init__(
        self,
        blobs: BlobStore,
        settings: Settings,
        versions: ProviderVersionService,
        platforms: ProviderPlatformService,
        keys: GPGKeyService,
    ) -> None:
        self._blobs, self._settings = blobs, settings
        self._versions, self._platforms, self._keys = versions, platforms, keys

    def _provider(self, principal: Principal, namespace: str, name: str) -> RegistryProvider:
        return self._versions.provider(principal, namespace, (PRIVATE, namespace, name), Action.READ_PROVIDERS)

    def _installable(self, version: ProviderVersion) -> builtins.list[ProviderPlatform]:
        if not (version.shasums_uploaded and version.signature_uploaded):
            return []
        return [p for p in self._platforms.of_version(version.id) if p.uploaded]

    def available(self, principal: Principal, namespace: str, name: str) -> builtins.list[dict[str, Any]]:
        """`GET /api/registry/v1/providers/:namespace/:type/versions`."""
        provider = self._provider(principal, namespace, name)
        found = []
        for version in provider.versions:
            platforms = self._installable(version)
            if platforms:
                found.append(
                    {
                        "version": version.version,
                        "protocols": list(version.protocols),
                        "platforms": [{"os": p.os, "arch": p.arch} for p in platforms],
                    }
                )
        return found

    def download(
        self, principal: Principal, namespace: str, name: str, version: str, os_arch: tuple[str, str]
    ) -> dict[str, Any]:
        """`GET .../:version/download/:os/:arch`."""
        provider = self._provider(principal, namespace, name)
        found = self._versions.one(provider, version)
        platform = self._platforms.one(provider, found, os_arch)
        if not platform.uploaded or not (found.shasums_uploaded and found.signature_uploaded):
            missing = "zip" if not platform.uploaded else "SHA256SUMS and SHA256SUMS.sig"
            platform_name = f"{os_arch[0]}_{os_arch[1]}"
            raise NotFound(f"{provider.address} {version} for {platform_name} is not installable: no {missing} yet")
        key = self._keys.signing_key(provider.organization, _key_id(found.key_id), provider.namespace)
        if key is None:
            raise TransitionNotAllowed(
                f"{provider.address} {version} is signed by the GPG key {found.key_id}, which is not a key of "
                f"{provider.namespace}: add it (/api/registry/private/v2/gpg-keys) to install this version"
            )
        shasums, signature = self._versions.recorded_files(provider.id, version)
        ttl = min(DOWNLOAD_TTL_S, self._settings.presign_ttl_s)
        urls = {}
        files = [
            ("download_url", platform.blob_key, self._platforms.recorded_binary(platform), "zip"),
            ("shasums_url", found.shasums_key, _size_md5(shasums), "SHA256SUMS"),
            ("shasums_signature_url", found.signature_key, _size_md5(signature), "SHA256SUMS.sig"),
        ]
        for field, blob_key, (size, md5), what in files:
            require_recorded(self._blobs, blob_key, md5, size, f"{what} of {provider.address} {version}")
            urls[field] = self._blobs.presign_get(blob_key, ttl)
        return {
            "protocols": list(found.protocols),
            "os": platform.os,
            "arch": platform.arch,
            "filename": platform.filename,
            **urls,
            "shasum": platform.shasum,
            "signing_keys": {
                "gpg_public_keys": [
                    {
                        "key_id": key.key_id,
                        "ascii_armor": key.ascii_armor,
                        "trust_signature": "",
                        "source": "",
                        "source_url": None,
                    }
                ]
            },
        }


def _key_id(value: str) -> str:
    """A version's key-id as the key's 16-digit ID (a full fingerprint's last 16 digits; any case)."""
    upper = value.upper()
    return upper[-16:] if len(upper) == 40 and all(c in "0123456789ABCDEF" for c in upper) else upper


def _size_md5(record: dict[str, Any] | None) -> tuple[int | None, str | None]:
    return (record or {}).get("size"), (record or {}).get("md5")
