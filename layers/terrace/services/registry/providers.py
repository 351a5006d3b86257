"""Registry providers of an organization (TFC's `/organizations/:org/registry-providers`).

A private provider is `(organization, name)`; its namespace is the organization's name (read at each use, so a
renamed organization's providers follow it). A `public` entry only points at a public registry's provider
(`namespace/name`) and has no versions here. Each is claimed under its address in one transaction with its item,
so two creations of one address leave one provider. Every member reads providers (`READ_PROVIDERS`); creating and
deleting them is `MANAGE_PROVIDERS` (owners, teams with `manage-providers`).
"""

from __future__ import annotations

import builtins
from collections.abc import Callable
from typing import Any

from terrace.adapters.table import ConditionFailed, Delete, Put, Table
from terrace.domain import clock
from terrace.domain.errors import Conflict, Invalid, NotFound
from terrace.domain.ids import new_id
from terrace.domain.organizations import Organization
from terrace.domain.principal import Principal
from terrace.domain.registry_providers import (
    PRIVATE,
    PUBLIC,
    ProviderVersion,
    RegistryProvider,
    check_namespace,
    check_provider_name,
    check_registry_name,
)
from terrace.services.access.authz import Action, Authorizer
from terrace.services.access.organizations import OrganizationService

SORT_KEY = "regprov"


def _claims(org_key: str) -> str:
    return f"org#{org_key}#regprovnames"


def _index(org_key: str) -> str:
    return f"org#{org_key}#registry-providers"


def _address(registry: str, namespace: str, name: str) -> str:
    """The claim's sort key: a private provider's namespace is its organization, whatever its name is now."""
    if registry == PRIVATE:
        return f"private/{name.lower()}"
    return f"public/{namespace.lower()}/{name.lower()}"


class RegistryProviderService:
    def __init__(
        self,
        table: Table,
        organizations: OrganizationService,
        authz: Authorizer,
        *,
        versions_of: Callable[[str], builtins.list[ProviderVersion]],
        before_delete: Callable[[str], None],
        purge_keys: Callable[[str], None],
    ) -> None:
        self._table, self._orgs, self._authz = table, organizations, authz
        self.versions_of = versions_of  # a provider's versions, newest first (the versions service)
        # called before a provider's item goes: deletes its versions, platforms and their files
        self.before_delete = before_delete
        self.purge_keys = purge_keys  # called when an organization is purged: deletes its namespace's GPG keys

    def _public(self, item: dict[str, Any], org: Organization, principal: Principal) -> RegistryProvider:
        namespace = org.name if item["registry_name"] == PRIVATE else item["namespace"]
        return RegistryProvider(
            id=item["pk"],
            organization=item["organization"],
            organization_name=org.name,
            registry_name=item["registry_name"],
            namespace=namespace,
            name=item["name"],
            created_at=item["created_at"],
            updated_at=item["updated_at"],
            versions=tuple(self.versions_of(item["pk"])) if item["registry_name"] == PRIVATE else (),
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
        for item in self._table.query(_index(org.key), index="gsi1"):
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
        claim = self._table.get(_claims(org.key), _address(registry, namespace, name))
        item = self._table.get(claim["provider_id"], SORT_KEY) if claim else None
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
        address = _address(registry, namespace, name)
        item = {
            "pk": provider_id,
            "sk": SORT_KEY,
            "organization": org.key,
            "organization_id": org.id,
            "registry_name": registry,
            "namespace": namespace if registry == PUBLIC else "",
            "name": name,
            "address": address,
            "created_at": now,
            "updated_at": now,
            "version": 1,
            "gsi1pk": _index(org.key),
            "gsi1sk": f"{address}#{provider_id}",
        }
        claim = {"pk": _claims(org.key), "sk": address, "provider_id": provider_id, "organization_id": org.id}
        try:
            self._table.transact([Put(claim, if_absent=True), Put(item, if_absent=True)])
        except ConditionFailed as exc:
            raise Conflict(f"a provider {namespace}/{name} already exists in {org.name}") from exc
        return self._public(item, org, principal)

    def delete(self, principal: Principal, organization: str, address: tuple[str, str, str]) -> None:
        """Deletes a provider, its versions, their platforms and files."""
        provider = self.get(principal, organization, address, Action.MANAGE_PROVIDERS)
        item = self._table.get(provider.id, SORT_KEY)
        if item is not None:
            self._delete_item(item)

    def _delete_item(self, item: dict[str, Any]) -> None:
        self.before_delete(item["pk"])  # its versions and their files first: a deletion cut short is finished again
        self._table.transact([Delete(_claims(item["organization"]), item["address"]), Delete(item["pk"], SORT_KEY)])

    def purge_organization(self, org_key: str) -> None:
        """Every provider of a deleted organization, with its versions and their files (`workflows/purge.py`)."""
        for item in self._table.query(_index(org_key), index="gsi1"):
            self._delete_item(item)
        self.purge_keys(org_key)
