"""The private registry (services/registry/): modules and their versions.

Mixed into `bootstrap.Container`: each service is built on first use from the container's adapters and its
other services (what this area takes from the others is declared below as plain attributes)."""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING

from terrace.adapters.blobs import BlobStore
from terrace.adapters.table import Table
from terrace.config import Settings

if TYPE_CHECKING:
    from terrace.services.access.authz import Authorizer
    from terrace.services.access.organizations import OrganizationService
    from terrace.services.registry.module_versions import ModuleVersionService
    from terrace.services.registry.modules import RegistryModuleService


class RegistryServices:
    settings: Settings
    table: Table
    blobs: BlobStore
    # from the other areas
    organizations: OrganizationService
    authz: Authorizer

    @cached_property
    def registry_modules(self) -> RegistryModuleService:
        from terrace.services.registry.modules import RegistryModuleService

        modules = RegistryModuleService(self.table, self.organizations, self.authz)
        modules.versions_of = lambda module_id: self.module_versions.of_module(module_id)
        modules.before_delete = lambda module_id: self.module_versions.delete_all(module_id)
        return modules

    @cached_property
    def module_versions(self) -> ModuleVersionService:
        from terrace.services.registry.module_versions import ModuleVersionService

        return ModuleVersionService(self.table, self.blobs, self.settings, self.registry_modules)
