"""Registry providers of an organization (TFC's `/organizations/:org/registry-providers`).

A private provider is `(organization, name)`; its namespace is the organization's name (read at each use, so a
renamed organization's providers follow it). A `public` entry only points at a public registry's provider
(`namespace/name`) and has no versions here. Each is claimed under its address in one transaction with its item,
so two creations of one address leave one provider. Every member reads providers (`READ_PROVIDERS`); creating and
deleting them is `MANAGE_PROVIDERS` (owners, teams with `manage-providers`).
"""

from __future__ import annotations

import builtins
from typing import Any

from terrace.domain import clock
from terrace.domain.errors import Conflict, Invalid, NotFound
from terrace.domain.ids import new_id
from terrace.domain.organizations import Organization
from terrace.domain.principal import Principal
from terrace.domain.registry_providers import (
    PRIVATE,
    PUBLIC,
    RegistryProvider,
    check_namespace,
    check_provider_name,
    check_registry_name,
)
from terrace.services.access.authz import Action, Authorizer
from terrace.services.access.organizations import OrganizationService
from terrace.services.registry.store_providers import ProviderStore, provider_address


class RegistryProviderService:
    def __init__(self, store: ProviderStore, organizations: OrganizationService, authz: Authorizer) -> None:
        self._store, self._orgs, self._authz = store, organizations, authz

    def _public(self, item: dict[str, Any], org: Organization, principal: Principal) -> RegistryProvider:
        namespace = org.name if item["registry_name"] == PRIVATE else item["namespace"]
        return RegistryProvider(
            id=item["id"],
            organization=item["organization"],
            organization_name=org.name,
            registry_name=item["registry_name"],
            namespace=namespace,
            name=item["name"],
            created_at=item["created_at"],
            updated_at=item["updated_at"],
            versions=tuple(self._store.versions_of(item["id"])) if item["registry_name"] == PRIVATE else (),
            can_manage=self._authz.can(principal, Action.MANAGE_PROVIDERS, org.view),
        )

    # reads ------------------------------------------------------------------------------------
    def list(
        self, principal: Principal, organization: str, filters: dict[str, str] | None = None
    ) -> builtins.list[RegistryProvider]:
        org = self._orgs.get(principal, organization, Action.READ_PROVIDERS)
        filters = filters or {}
        query = (filters.get("q") or "").lower()
        found = []
        for item in self._store.providers_of(org.key):
            if item.get("organization_id") != org.id:
                continue
            if filters.get("registry_name") and item["registry_name"] != filters["registry_name"]:
                continue
            provider = self._public(item, org, principal)
            if query and not any(query in v.lower() for v in (provider.name, provider.namespace)):
                continue
            found.append(provider)
        return found

    def get(
        self,
        principal: Principal,
        organization: str,
        address: tuple[str, str, str],
        action: Action = Action.READ_PROVIDERS,
    ) -> RegistryProvider:
        """`address`: (registry name, namespace, name). Absent and hidden read alike."""
        registry, namespace, name = address
        missing = NotFound(f"registry provider {namespace}/{name} not found")
        try:
            org = self._orgs.get(principal, organization, action)
        except NotFound as exc:
            raise missing from exc
        if registry not in (PRIVATE, PUBLIC) or (registry == PRIVATE and namespace.lower() != org.name.lower()):
            raise missing
        item = self._store.claimed(org.key, provider_address(registry, namespace, name))
        if item is None or item.get("organization_id") != org.id:
            raise missing
        return self._public(item, org, principal)

    # writes -----------------------------------------------------------------------------------
    def create(self, principal: Principal, organization: str, attrs: dict[str, Any]) -> RegistryProvider:
        org = self._orgs.get(principal, organization, Action.MANAGE_PROVIDERS)
        name = check_provider_name(attrs.get("name"))
        namespace = attrs.get("namespace")
        if namespace in (None, ""):
            raise Invalid("namespace is required", pointer="/data/attributes/namespace")
        namespace = check_namespace(namespace)
        registry = check_registry_name(attrs.get("registry-name"))
        if registry == PRIVATE and namespace != org.name:
            raise Invalid(
                "a private provider's namespace is its organization's name", pointer="/data/attributes/namespace"
            )
        now, provider_id = clock.now_iso(), new_id("prov")
        address = provider_address(registry, namespace, name)
        item = {
            "id": provider_id,
            "organization": org.key,
            "organization_id": org.id,
            "registry_name": registry,
            "namespace": namespace if registry == PUBLIC else "",
            "name": name,
            "address": address,
            "created_at": now,
            "updated_at": now,
            "version": 1,
        }
        if not self._store.create(item):  # (with its address's claim)
            raise Conflict(f"a provider {namespace}/{name} already exists in {org.name}")
        return self._public(item, org, principal)

    def delete(self, principal: Principal, organization: str, address: tuple[str, str, str]) -> None:
        """Deletes a provider, its versions, their platforms and files."""
        provider = self.get(principal, organization, address, Action.MANAGE_PROVIDERS)
        self._store.delete(provider.id)  # its versions and their files first: a deletion cut short is finished again
