"""The private registry (services/registry/): modules and their versions; providers, their versions, platforms,
GPG keys and downloads.

Mixed into `bootstrap.Container`: each service is built on first use from the container's adapters and its
other services (what this area takes from the others is declared below as plain attributes)."""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING

from terrace.adapters.blobs import BlobStore
from terrace.adapters.table import Table
from terrace.config import Settings

if TYPE_CHECKING:
    from terrace.adapters.hcl_reader import HclReader
    from terrace.services.access.authz import Authorizer
    from terrace.services.access.organizations import OrganizationService
    from terrace.services.registry.gpg_keys import GPGKeyService
    from terrace.services.registry.module_versions import ModuleVersionService
    from terrace.services.registry.modules import RegistryModuleService
    from terrace.services.registry.no_code_modules import NoCodeModuleService
    from terrace.services.registry.provider_downloads import ProviderDownloadService
    from terrace.services.registry.provider_platforms import ProviderPlatformService
    from terrace.services.registry.provider_versions import ProviderVersionService
    from terrace.services.registry.providers import RegistryProviderService
    from terrace.services.registry.store import ModuleStore
    from terrace.services.registry.store_providers import ProviderStore
    from terrace.services.runs.configuration_versions import ConfigurationVersionService
    from terrace.services.runs.store import RunStore
    from terrace.services.vcs.connections import RepositoryConnections
    from terrace.services.workflows.module_tests import ModuleTests


class RegistryServices:
    settings: Settings
    table: Table
    blobs: BlobStore
    # from the other areas
    organizations: OrganizationService
    authz: Authorizer
    module_tests: ModuleTests  # wiring/workflow_services.py: a deleted module's tests go with it
    run_store: RunStore  # wiring/run_services.py: a run's configuration (revoked module versions)
    configuration_versions: ConfigurationVersionService
    repository_connections: RepositoryConnections  # wiring/vcs_services.py
    remote_hcl_reader: HclReader | None  # a field of the container: the policy function on AWS

    @cached_property
    def hcl_reader(self) -> HclReader:
        """Uploaded HCL (a module's `.tf` files, a policy set's `policies.hcl`), read in a bounded child process:
        on AWS in the policy function (`adapters/lambda_hcl_reader.py`), else beside this process."""
        if self.remote_hcl_reader is not None:
            return self.remote_hcl_reader
        from terrace.adapters.process_hcl_reader import ProcessHclReader

        return ProcessHclReader()

    @cached_property
    def registry_module_store(self) -> ModuleStore:
        """Modules, their versions and their blobs: their keys and items."""
        from terrace.services.registry.store import ModuleStore

        return ModuleStore(self.table, self.blobs)

    @cached_property
    def registry_provider_store(self) -> ProviderStore:
        """Providers, their versions, platforms and files, and the GPG keys: their keys and items."""
        from terrace.services.registry.store_providers import ProviderStore

        return ProviderStore(self.table, self.blobs)

    @cached_property
    def registry_modules(self) -> RegistryModuleService:
        from terrace.services.registry.modules import RegistryModuleService

        return RegistryModuleService(
            self.registry_module_store,
            self.organizations,
            self.authz,
            on_deleted=lambda module: self.module_tests.forget(module),  # wiring/workflow_services.py
            repository_link=self.repository_connections,  # wiring/vcs_services.py: modules from a repository
        )

    @cached_property
    def no_code_modules(self) -> NoCodeModuleService:
        from terrace.services.registry.no_code_modules import NoCodeModuleService

        return NoCodeModuleService(self.registry_module_store, self.registry_modules)

    @cached_property
    def module_versions(self) -> ModuleVersionService:
        from terrace.services.registry.module_versions import ModuleVersionService

        return ModuleVersionService(
            self.registry_module_store,
            self.blobs,
            self.settings,
            self.registry_modules,
            self.hcl_reader,
            self._configuration_uploaded_at,
        )

    def _configuration_uploaded_at(self, run_id: str) -> str | None:
        """When the configuration of run `run_id` was uploaded (a revoked module version installs only for one from
        before its revocation); None for no such run."""
        from terrace.domain.errors import NotFound

        try:
            run = self.run_store.load(run_id)
            return self.configuration_versions.load(run.configuration_version_id).created_at
        except NotFound:
            return None

    @cached_property
    def registry_providers(self) -> RegistryProviderService:
        from terrace.services.registry.providers import RegistryProviderService

        return RegistryProviderService(self.registry_provider_store, self.organizations, self.authz)

    @cached_property
    def provider_versions(self) -> ProviderVersionService:
        from terrace.services.registry.provider_versions import ProviderVersionService

        return ProviderVersionService(self.registry_provider_store, self.blobs, self.settings, self.registry_providers)

    @cached_property
    def provider_platforms(self) -> ProviderPlatformService:
        from terrace.services.registry.provider_platforms import ProviderPlatformService

        return ProviderPlatformService(self.registry_provider_store, self.blobs, self.settings, self.provider_versions)

    @cached_property
    def gpg_keys(self) -> GPGKeyService:
        from terrace.services.registry.gpg_keys import GPGKeyService

        return GPGKeyService(self.registry_provider_store, self.organizations)

    @cached_property
    def provider_downloads(self) -> ProviderDownloadService:
        from terrace.services.registry.provider_downloads import ProviderDownloadService

        return ProviderDownloadService(
            self.blobs, self.settings, self.provider_versions, self.provider_platforms, self.gpg_keys
        )

    def provider_file_landed(self, key: str) -> None:
        """A file landed under `provider-uploads/` (the `blob.landed` event): a version's checksums or signature,
        or a platform's zip."""
        if key.endswith(".zip"):
            self.provider_platforms.landed(key)
        else:
            self.provider_versions.landed(key)
