"""Platforms of a private provider version (go-tfe's `registry_provider_platform.go`): an (os, arch) pair, its
zip's file name and SHA-256, and the zip itself, uploaded to a single-use URL (`links.provider-binary-upload`,
given while the zip is missing). The zip's landing (`blob.landed`) reads it once: past `BINARY_MAX_BYTES`, or with
another SHA-256 than the platform declares, it is deleted and the platform says why (`error`); else its size and
MD5 are recorded and downloads serve it only as recorded.
"""

from __future__ import annotations

import builtins
import hashlib
from typing import Any

from terrace.adapters.blobs import BlobStore
from terrace.config import Settings
from terrace.domain import clock
from terrace.domain.errors import Conflict, NotFound
from terrace.domain.ids import looks_like, new_id
from terrace.domain.principal import Principal
from terrace.domain.registry_providers import (
    BINARY_MAX_BYTES,
    PRIVATE,
    ProviderPlatform,
    ProviderVersion,
    RegistryProvider,
    check_platform,
)
from terrace.services.access.authz import Action
from terrace.services.blob_records import md5_of
from terrace.services.registry.provider_versions import UPLOAD_PREFIX, ProviderVersionService
from terrace.services.registry.store_providers import ProviderStore, platform_of


class ProviderPlatformService:
    def __init__(
        self, store: ProviderStore, blobs: BlobStore, settings: Settings, versions: ProviderVersionService
    ) -> None:
        self._store, self._blobs, self._settings, self._versions = store, blobs, settings, versions

    def of_version(self, version_id: str) -> builtins.list[ProviderPlatform]:
        return self._store.platforms_of(version_id)

    def _version(
        self, principal: Principal, organization: str, address: tuple[str, str, str], version: str, action: Action
    ) -> tuple[RegistryProvider, ProviderVersion]:
        provider = self._versions.provider(principal, organization, address, action)
        return provider, self._versions.one(provider, version)

    def list(
        self, principal: Principal, organization: str, address: tuple[str, str, str], version: str
    ) -> tuple[RegistryProvider, builtins.list[ProviderPlatform]]:
        provider, found = self._version(principal, organization, address, version, Action.READ_PROVIDERS)
        return provider, self.of_version(found.id)

    def create(
        self,
        principal: Principal,
        organization: str,
        address: tuple[str, str, str],
        version: str,
        attrs: dict[str, Any],
    ) -> tuple[RegistryProvider, ProviderPlatform]:
        provider, found = self._version(principal, organization, address, version, Action.MANAGE_PROVIDERS)
        os_name, arch, filename, shasum = check_platform(attrs)
        platform_id = new_id("provpltfrm")
        created = ProviderPlatform(
            id=platform_id,
            version_id=found.id,
            os=os_name,
            arch=arch,
            filename=filename,
            shasum=shasum,
            blob_key=f"{UPLOAD_PREFIX}{provider.id}/{found.id}/{platform_id}.zip",
            created_at=clock.now_iso(),
        )
        if not self._store.create_platform(created):
            raise Conflict(f"version {version} of {provider.address} already has a platform {os_name}/{arch}")
        return provider, created

    def read(
        self,
        principal: Principal,
        organization: str,
        address: tuple[str, str, str],
        version: str,
        os_arch: tuple[str, str],
    ) -> tuple[RegistryProvider, ProviderPlatform]:
        provider, found = self._version(principal, organization, address, version, Action.READ_PROVIDERS)
        return provider, self.one(provider, found, os_arch)

    def one(self, provider: RegistryProvider, version: ProviderVersion, os_arch: tuple[str, str]) -> ProviderPlatform:
        found = self._store.platform(version.id, *os_arch)
        if found is None:
            raise NotFound(f"platform {os_arch[0]}/{os_arch[1]} of {provider.address} {version.version} not found")
        return found

    def page(
        self, principal: Principal, organization: str, name: str
    ) -> tuple[RegistryProvider, builtins.list[tuple[ProviderVersion, builtins.list[ProviderPlatform]]]]:
        """The UI's provider page: a private provider and each version with its platforms, newest first."""
        provider = self._versions.provider(principal, organization, (PRIVATE, organization, name))
        return provider, [(v, self.of_version(v.id)) for v in provider.versions]

    def upload_link(self, provider: RegistryProvider, platform: ProviderPlatform) -> dict[str, str]:
        """The single-use upload link of a platform's missing zip, for a caller who may publish the provider
        (`provider` as read for the caller: `can_manage` is the Authorizer's `manage-providers`); none for anyone
        else."""
        if platform.uploaded or not provider.can_manage:
            return {}
        return {"provider-binary-upload": self._blobs.presign_put(platform.blob_key, self._settings.presign_ttl_s)}

    def download_link(self, platform: ProviderPlatform) -> dict[str, str]:
        if not platform.uploaded:
            return {}
        return {"provider-binary-download": self._blobs.presign_get(platform.blob_key, self._settings.presign_ttl_s)}

    def delete(
        self,
        principal: Principal,
        organization: str,
        address: tuple[str, str, str],
        version: str,
        os_arch: tuple[str, str],
    ) -> None:
        provider, found = self._version(principal, organization, address, version, Action.MANAGE_PROVIDERS)
        self._store.delete_platform(self.one(provider, found, os_arch))  # (and its zip)

    def recorded_binary(self, platform: ProviderPlatform) -> tuple[int | None, str | None]:
        """The size and MD5 recorded of a platform's zip when it landed."""
        return self._store.recorded_binary(platform)

    # the zip's landing (events worker) -------------------------------------------------------------
    def landed(self, key: str) -> ProviderPlatform | None:
        """A platform's zip landed under `provider-uploads/<provider>/<version id>/<platform id>.zip`."""
        parts = key.split("/")
        if len(parts) != 4 or not parts[3].endswith(".zip") or not looks_like(parts[2], "provver"):
            return None
        item = self._store.platform_item(parts[2], key)
        info = self._blobs.head(key)
        if item is None or info is None or platform_of(item).uploaded:
            return None
        updated: dict[str, Any] = {}  # (the last landing's error goes)
        if info.size > BINARY_MAX_BYTES:
            updated["error"] = (
                f"a provider zip is at most {BINARY_MAX_BYTES} bytes: the upload of {info.size} was refused"
            )
        else:
            digest = hashlib.sha256()
            for chunk in self._blobs.iter_chunks(key):
                digest.update(chunk)
            if digest.hexdigest() != platform_of(item).shasum.lower():
                updated["error"] = f"the uploaded zip's SHA-256 is {digest.hexdigest()}, not the platform's shasum"
            else:
                updated["binary"] = {"size": info.size, "md5": md5_of(info)}
        if "binary" not in updated:
            self._blobs.delete(key)  # refused: a new upload link is given
        return self._store.land_platform(item, updated)  # None when another landing of the same upload decided first
