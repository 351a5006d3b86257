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

from terrace.adapters.table import ConditionFailed, Delete, Put, Table
from terrace.domain import clock
from terrace.domain.errors import Conflict, Invalid, NotFound
from terrace.domain.ids import looks_like, new_id
from terrace.domain.organizations import Organization
from terrace.domain.principal import Principal
from terrace.domain.registry_modules import (
    PRIVATE,
    PUBLIC,
    ModuleVersion,
    RegistryModule,
    check_name,
    check_namespace,
    check_provider,
    check_registry_name,
)
from terrace.services.access.authz import Action, Authorizer
from terrace.services.access.organizations import OrganizationService

SORT_KEY = "regmod"


def _claims(org_key: str) -> str:
    return f"org#{org_key}#regmodnames"


def _address(registry: str, namespace: str, name: str, provider: str) -> str:
    """The claim's sort key: a private module's namespace is its organization, whatever its name is now."""
    if registry == PRIVATE:
        return f"private/{name.lower()}/{provider}"
    return f"public/{namespace.lower()}/{name.lower()}/{provider}"


class RegistryModuleService:
    def __init__(
        self,
        table: Table,
        organizations: OrganizationService,
        authz: Authorizer,
        *,
        versions_of: Callable[[str], builtins.list[ModuleVersion]],
        before_delete: Callable[[str], None],
    ) -> None:
        self._table, self._orgs, self._authz = table, organizations, authz
        self.versions_of = versions_of  # a module's versions, newest first (the versions service)
        # called before a module's item goes: deletes its versions and their tarballs
        self.before_delete = before_delete

    def _public(self, item: dict[str, Any], org: Organization, principal: Principal) -> RegistryModule:
        namespace = org.name if item["registry_name"] == PRIVATE else item["namespace"]
        return RegistryModule(
            id=item["pk"],
            organization=item["organization"],
            organization_name=org.name,
            registry_name=item["registry_name"],
            namespace=namespace,
            name=item["name"],
            provider=item["provider"],
            created_at=item["created_at"],
            updated_at=item["updated_at"],
            versions=tuple(self.versions_of(item["pk"])),
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
        for item in self._table.query(f"org#{org.key}#registry-modules", index="gsi1"):
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
        claim = self._table.get(_claims(org.key), _address(registry, namespace, name, provider))
        item = self._table.get(claim["module_id"], SORT_KEY) if claim else None
        if item is None or item.get("organization_id") != org.id:
            raise missing
        return self._public(item, org, principal)

    def get_by_id(self, principal: Principal, module_id: str, action: Action = Action.READ_MODULES) -> RegistryModule:
        item = self._table.get(module_id, SORT_KEY) if looks_like(module_id, "mod") else None
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
        address = _address(registry, namespace or org.name, name, provider)
        item = {
            "pk": module_id,
            "sk": SORT_KEY,
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
            "gsi1pk": f"org#{org.key}#registry-modules",
            "gsi1sk": f"{address}#{module_id}",
        }
        claim = {"pk": _claims(org.key), "sk": address, "module_id": module_id, "organization_id": org.id}
        try:
            self._table.transact([Put(claim, if_absent=True), Put(item, if_absent=True)])
        except ConditionFailed as exc:
            raise Conflict(f"a module {address.split('/', 1)[1]} already exists in {org.name}") from exc
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
        item = self._table.get(module.id, SORT_KEY)
        if item is not None:
            self._delete_item(item)

    def _delete_item(self, item: dict[str, Any]) -> None:
        self.before_delete(item["pk"])  # its versions and their blobs first: a deletion cut short is finished again
        self._table.transact([Delete(_claims(item["organization"]), item["address"]), Delete(item["pk"], SORT_KEY)])

    def purge_organization(self, org_key: str) -> None:
        """Every module of a deleted organization, with its versions and their blobs (`workflows/purge.py`; not
        checked: the organization's deletion was)."""
        for item in self._table.query(f"org#{org_key}#registry-modules", index="gsi1"):
            self._delete_item(item)
