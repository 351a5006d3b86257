"""Registry modules of an organization (TFC's `/organizations/:org/registry-modules`).

A private module is `(organization, name, provider)`; its namespace is the organization's name (read at each use,
so a renamed organization's modules follow it). A `public` entry only points at a public registry's module
(`namespace/name/provider`) and has no versions here. Each is claimed under its address in one transaction with
its item, so two creations of one address leave one module. Every member reads modules (`READ_MODULES`);
creating, changing and deleting them is `MANAGE_MODULES` (owners, teams with `manage-modules`).
"""

from __future__ import annotations

import builtins
from collections.abc import Callable
from typing import Any

from terrace.domain import clock
from terrace.domain.errors import Conflict, Invalid, NotFound
from terrace.domain.ids import looks_like, new_id
from terrace.domain.organizations import Organization
from terrace.domain.principal import Principal
from terrace.domain.registry_modules import (
    PRIVATE,
    PUBLIC,
    RegistryModule,
    check_name,
    check_namespace,
    check_provider,
    check_registry_name,
)
from terrace.services.access.authz import Action, Authorizer
from terrace.services.access.organizations import OrganizationService
from terrace.services.registry.store import ModuleStore, module_address


class RegistryModuleService:
    def __init__(
        self,
        store: ModuleStore,
        organizations: OrganizationService,
        authz: Authorizer,
        on_deleted: Callable[[RegistryModule], None] = lambda _module: None,
    ) -> None:
        self._store, self._orgs, self._authz = store, organizations, authz
        # a module deleted: what other areas keep for it goes too (its tests: `services/workflows/module_tests.py`)
        self._on_deleted = on_deleted

    def _public(self, item: dict[str, Any], org: Organization, principal: Principal) -> RegistryModule:
        namespace = org.name if item["registry_name"] == PRIVATE else item["namespace"]
        return RegistryModule(
            id=item["id"],
            organization=item["organization"],
            organization_name=org.name,
            registry_name=item["registry_name"],
            namespace=namespace,
            name=item["name"],
            provider=item["provider"],
            created_at=item["created_at"],
            updated_at=item["updated_at"],
            versions=tuple(self._store.versions_of(item["id"])),
            can_manage=self._authz.can(principal, Action.MANAGE_MODULES, org.view),
        )

    # reads ------------------------------------------------------------------------------------
    def list(
        self, principal: Principal, organization: str, filters: dict[str, str] | None = None
    ) -> builtins.list[RegistryModule]:
        org = self._orgs.get(principal, organization, Action.READ_MODULES)
        filters = filters or {}
        query = (filters.get("q") or "").lower()
        found = []
        for item in self._store.modules_of(org.key):
            if item.get("organization_id") != org.id:
                continue
            if filters.get("registry_name") and item["registry_name"] != filters["registry_name"]:
                continue
            if filters.get("provider") and item["provider"] != filters["provider"]:
                continue
            module = self._public(item, org, principal)
            if query and not any(query in v.lower() for v in (module.name, module.namespace, module.provider)):
                continue
            found.append(module)
        return found

    def get(
        self,
        principal: Principal,
        organization: str,
        address: tuple[str, str, str, str],
        action: Action = Action.READ_MODULES,
    ) -> RegistryModule:
        """`address`: (registry name, namespace, name, provider). Absent and hidden read alike."""
        registry, namespace, name, provider = address
        missing = NotFound(f"registry module {namespace}/{name}/{provider} not found")
        try:
            org = self._orgs.get(principal, organization, action)
        except NotFound as exc:
            raise missing from exc
        if registry not in (PRIVATE, PUBLIC) or (registry == PRIVATE and namespace.lower() != org.name.lower()):
            raise missing
        item = self._store.claimed(org.key, module_address(registry, namespace, name, provider))
        if item is None or item.get("organization_id") != org.id:
            raise missing
        return self._public(item, org, principal)

    def get_by_id(self, principal: Principal, module_id: str, action: Action = Action.READ_MODULES) -> RegistryModule:
        item = self._store.module(module_id) if looks_like(module_id, "mod") else None
        try:
            org = self._orgs.get_by_key(principal, item["organization"], action) if item else None
        except NotFound:
            org = None
        if item is None or org is None or item.get("organization_id") != org.id:
            raise NotFound(f"registry module {module_id} not found")
        return self._public(item, org, principal)

    # writes -----------------------------------------------------------------------------------
    def create(self, principal: Principal, organization: str, attrs: dict[str, Any]) -> RegistryModule:
        org = self._orgs.get(principal, organization, Action.MANAGE_MODULES)
        registry = check_registry_name(attrs.get("registry-name"))
        name, provider = check_name(attrs.get("name")), check_provider(attrs.get("provider"))
        namespace = attrs.get("namespace")
        if registry == PUBLIC:
            namespace = check_namespace(namespace)
        elif namespace not in (None, "", org.name):
            raise Invalid(
                "a private module's namespace is its organization's name", pointer="/data/attributes/namespace"
            )
        if attrs.get("vcs-repo"):
            raise Invalid("modules published from a VCS repository are not supported: publish versions through the API")
        now, module_id = clock.now_iso(), new_id("mod")
        address = module_address(registry, namespace or org.name, name, provider)
        item = {
            "id": module_id,
            "organization": org.key,
            "organization_id": org.id,
            "registry_name": registry,
            "namespace": namespace or "",
            "name": name,
            "provider": provider,
            "address": address,
            "created_at": now,
            "updated_at": now,
            "version": 1,
        }
        if not self._store.create(item):  # (with its address's claim)
            raise Conflict(f"a module {address.split('/', 1)[1]} already exists in {org.name}")
        return self._public(item, org, principal)

    def delete(self, principal: Principal, organization: str, address: tuple[str, str, str, str]) -> None:
        """Deletes one provider of a module and its versions (`DELETE .../:namespace/:name/:provider`)."""
        self._delete(self.get(principal, organization, address, Action.MANAGE_MODULES))

    def delete_named(
        self, principal: Principal, organization: str, registry: str | None, namespace: str | None, name: str
    ) -> None:
        """Deletes every provider of the module `name` (`DELETE .../:registry/:namespace/:name`; None for both:
        go-tfe's older `actions/delete/:org/:name`, every module of that name); 404 when there is none."""
        org = self._orgs.get(principal, organization, Action.MANAGE_MODULES)
        found = [
            m
            for m in self.list(principal, organization, {"registry_name": registry or ""})
            if m.name.lower() == name.lower() and namespace in (None, m.namespace) and m.organization == org.key
        ]
        if not found:
            raise NotFound(f"registry module {namespace or org.name}/{name} not found")
        for module in found:
            self._delete(module)

    def _delete(self, module: RegistryModule) -> None:
        self._on_deleted(module)  # first: a deletion cut short leaves the module, and deleting it again finishes
        self._store.delete(module.id)  # its versions and their blobs first: a deletion cut short is finished again
