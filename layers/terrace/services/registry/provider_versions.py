"""Versions of a private registry provider (go-tfe's `registry_provider_version.go`).

A version names the GPG key that signs its checksums (`key-id`) and the plugin protocols it speaks. Its
`SHA256SUMS` and `SHA256SUMS.sig` go to single-use upload URLs (`links.shasums-upload`, `links.shasums-sig-upload`,
under `UPLOAD_PREFIX`, given while the file is missing); a file's landing (`blob.landed`) records its size and
MD5, or deletes it when it is past its limit (`error`, shown in the UI). Downloads serve a file only as recorded
(`blob_records.require_recorded`). Platforms and their zips are `provider_platforms.py`.
"""

from __future__ import annotations

import builtins
from typing import Any

from terrace.adapters.blobs import BlobStore
from terrace.config import Settings
from terrace.domain import clock
from terrace.domain.errors import Conflict, NotFound
from terrace.domain.ids import looks_like, new_id
from terrace.domain.principal import Principal
from terrace.domain.registry_modules import is_version
from terrace.domain.registry_providers import (
    PRIVATE,
    SHASUMS_MAX_BYTES,
    SIGNATURE_MAX_BYTES,
    ProviderVersion,
    RegistryProvider,
    check_key_id,
    check_protocols,
    check_version,
)
from terrace.services.access.authz import Action
from terrace.services.blob_records import md5_of
from terrace.services.registry.providers import RegistryProviderService
from terrace.services.registry.store_providers import ProviderStore, recorded

UPLOAD_PREFIX = "provider-uploads/"
SHASUMS, SIGNATURE = "SHA256SUMS", "SHA256SUMS.sig"
_LIMITS = {SHASUMS: SHASUMS_MAX_BYTES, SIGNATURE: SIGNATURE_MAX_BYTES}
_FIELDS = {SHASUMS: "shasums", SIGNATURE: "signature"}


class ProviderVersionService:
    def __init__(
        self, store: ProviderStore, blobs: BlobStore, settings: Settings, providers: RegistryProviderService
    ) -> None:
        self._store, self._blobs, self._settings, self._providers = store, blobs, settings, providers

    def of_provider(self, provider_id: str) -> builtins.list[ProviderVersion]:
        """A provider's versions, newest first (semantic version order)."""
        return self._store.versions_of(provider_id)

    def provider(
        self,
        principal: Principal,
        organization: str,
        address: tuple[str, str, str],
        action: Action = Action.READ_PROVIDERS,
    ) -> RegistryProvider:
        """The organization's provider at `address` (registry name, namespace, name): versions are private ones'."""
        provider = self._providers.get(principal, organization, address, action)
        if provider.registry_name != PRIVATE:
            raise NotFound(f"registry provider {provider.address} has no versions: it is not a private provider")
        return provider

    # publishing ------------------------------------------------------------------------------------
    def create(
        self, principal: Principal, organization: str, address: tuple[str, str, str], attrs: dict[str, Any]
    ) -> tuple[RegistryProvider, ProviderVersion]:
        provider = self.provider(principal, organization, address, Action.MANAGE_PROVIDERS)
        version, key_id = check_version(attrs.get("version")), check_key_id(attrs.get("key-id"))
        protocols = check_protocols(attrs.get("protocols"))
        now, version_id = clock.now_iso(), new_id("provver")
        prefix = f"{UPLOAD_PREFIX}{provider.id}/{version_id}/"
        created = ProviderVersion(
            id=version_id,
            provider_id=provider.id,
            version=version,
            key_id=key_id,
            protocols=protocols,
            created_at=now,
            updated_at=now,
            shasums_key=prefix + SHASUMS,
            signature_key=prefix + SIGNATURE,
        )
        if not self._store.create_version(created):
            raise Conflict(f"version {version} of {provider.address} already exists")
        return provider, created

    def read(
        self, principal: Principal, organization: str, address: tuple[str, str, str], version: str
    ) -> tuple[RegistryProvider, ProviderVersion]:
        provider = self.provider(principal, organization, address, Action.READ_PROVIDERS)
        return provider, self.one(provider, version)

    def one(self, provider: RegistryProvider, version: str) -> ProviderVersion:
        found = self._store.version(provider.id, version) if is_version(version) else None
        if found is None:
            raise NotFound(f"version {version} of registry provider {provider.address} not found")
        return found

    def recorded_files(self, provider_id: str, version: str) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        """The size and MD5 recorded of a version's `SHA256SUMS` and `SHA256SUMS.sig` (None for one not landed)."""
        return self._store.recorded_files(provider_id, version) if is_version(version) else (None, None)

    def upload_links(self, provider: RegistryProvider, version: ProviderVersion) -> dict[str, str]:
        """The single-use upload links of a version's missing files, for a caller who may publish the provider
        (`provider` as read for the caller: `can_manage` is the Authorizer's `manage-providers`); none for anyone
        else (holding one, they could break the release)."""
        ttl = self._settings.presign_ttl_s
        links: dict[str, str] = {}
        if not provider.can_manage:
            return links
        if not version.shasums_uploaded:
            links["shasums-upload"] = self._blobs.presign_put(version.shasums_key, ttl)
        if not version.signature_uploaded:
            links["shasums-sig-upload"] = self._blobs.presign_put(version.signature_key, ttl)
        return links

    def download_links(self, version: ProviderVersion) -> dict[str, str]:
        ttl = self._settings.presign_ttl_s
        links = {}
        if version.shasums_uploaded:
            links["shasums-download"] = self._blobs.presign_get(version.shasums_key, ttl)
        if version.signature_uploaded:
            links["shasums-sig-download"] = self._blobs.presign_get(version.signature_key, ttl)
        return links

    def delete(self, principal: Principal, organization: str, address: tuple[str, str, str], version: str) -> None:
        provider = self.provider(principal, organization, address, Action.MANAGE_PROVIDERS)
        self._store.delete_version(self.one(provider, version))  # its platforms first, then its files

    # a file's landing (events worker) --------------------------------------------------------------
    def landed(self, key: str) -> ProviderVersion | None:
        """`SHA256SUMS` or `SHA256SUMS.sig` landed under `provider-uploads/<provider>/<version id>/`."""
        parts = key.split("/")
        if len(parts) != 4 or parts[3] not in _FIELDS or not looks_like(parts[1], "prov"):
            return None
        info, name = self._blobs.head(key), parts[3]
        for _ in range(5):  # the two files may land at once: each records its own field on the newest item
            item = self._store.version_item(parts[1], parts[2])
            if item is None or info is None or recorded(item, _FIELDS[name]) is not None:
                return None
            updated: dict[str, Any] = {"updated_at": clock.now_iso()}
            if info.size > _LIMITS[name]:
                self._blobs.delete(key)
                updated["error"] = f"{name} is at most {_LIMITS[name]} bytes: the upload of {info.size} was refused"
            else:
                updated[_FIELDS[name]] = {"size": info.size, "md5": md5_of(info)}
            landed = self._store.land_version(item, updated)
            if landed is not None:
                return landed
        return None
