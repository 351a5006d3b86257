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
from typing import Any, Protocol

from terrace.domain import clock
from terrace.domain.errors import Conflict, Invalid, NotFound
from terrace.domain.ids import looks_like, new_id
from terrace.domain.organizations import Organization
from terrace.domain.principal import Principal
from terrace.domain.registry_modules import (
    BRANCH,
    GIT_TAG,
    PRIVATE,
    PUBLIC,
    RegistryModule,
    check_name,
    check_namespace,
    check_provider,
    check_registry_name,
    check_version,
    from_repository,
)
from terrace.services.access.authz import Action, Authorizer
from terrace.services.access.organizations import OrganizationService
from terrace.services.registry.store import ModuleStore, module_address


class RepositoryLink(Protocol):
    """A module's repository (the VCS area, `services/vcs/connections.py`, fills it): its webhook registered under
    the module's id before the module is written, deleted with it; `announce` once it is written."""

    def connect_owner(
        self, principal: Principal, organization: str, owner_id: str, raw: Any, current: dict[str, Any] | None
    ) -> dict[str, Any] | None: ...

    def release(self, owner_id: str) -> None: ...

    def announce(self, owner_id: str) -> None: ...


class RegistryModuleService:
    def __init__(
        self,
        store: ModuleStore,
        organizations: OrganizationService,
        authz: Authorizer,
        on_deleted: Callable[[RegistryModule], None] = lambda _module: None,
        repository_link: RepositoryLink | None = None,
    ) -> None:
        self._store, self._orgs, self._authz, self._link = store, organizations, authz, repository_link
        # a module deleted: what other areas keep for it goes too (its tests: `services/workflows/module_tests.py`)
        self._on_deleted = on_deleted

    def _public(self, item: dict[str, Any], org: Organization, principal: Principal | None) -> RegistryModule:
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
            can_manage=principal is not None and self._authz.can(principal, Action.MANAGE_MODULES, org.view),
            vcs_repo=item.get("vcs_repo"),
            publishing_mechanism=item.get("publishing_mechanism"),
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

    def load(self, module_id: str) -> RegistryModule | None:
        """A module by its id, unchecked (the events worker publishing a version from its repository)."""
        item = self._store.module(module_id) if looks_like(module_id, "mod") else None
        org = self._orgs.by_key(item["organization"]) if item else None
        if item is None or org is None or item.get("organization_id") != org.id:
            return None
        return self._public(item, org, None)

    # writes -----------------------------------------------------------------------------------
    def create_from_vcs(self, principal: Principal, organization: str, attrs: dict[str, Any]) -> RegistryModule:
        """A private module published from a repository (`POST .../registry-modules/vcs`): its name and provider
        from the repository's name (`terraform-<provider>-<name>`); `vcs-repo`'s `branch` publishes versions of
        that branch's commits through the API (HCP's branch-based publishing), else tags `vX.Y.Z` publish them."""
        org = self._orgs.get(principal, organization, Action.MANAGE_MODULES)
        raw = attrs.get("vcs-repo")
        if not isinstance(raw, dict) or self._link is None:
            raise Invalid("vcs-repo is required: identifier and oauth-token-id", pointer="/data/attributes/vcs-repo")
        name, provider = from_repository(str(raw.get("identifier") or ""))
        if raw.get("tags") is not None and not isinstance(raw.get("tags"), bool):
            raise Invalid("vcs-repo tags must be true or false", pointer="/data/attributes/vcs-repo/tags")
        mechanism = BRANCH if raw.get("branch") and raw.get("tags") is not True else GIT_TAG
        module_id = new_id("mod")
        shown = self._link.connect_owner(principal, org.key, module_id, raw, None)
        item = self._item(org, module_id, PRIVATE, "", name, provider)
        item.update(vcs_repo=shown, publishing_mechanism=mechanism)
        if mechanism == BRANCH and attrs.get("initial-version") is not None:
            item["initial_version"] = check_version(attrs["initial-version"])
        if not self._store.create(item):
            self._link.release(module_id)
            raise Conflict(f"a module {item['address'].split('/', 1)[1]} already exists in {org.name}")
        self._link.announce(module_id)
        return self._public(item, org, principal)

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
            raise Invalid("a module published from a repository is created with POST .../registry-modules/vcs")
        item = self._item(org, new_id("mod"), registry, namespace or "", name, provider)
        if not self._store.create(item):  # (with its address's claim)
            raise Conflict(f"a module {item['address'].split('/', 1)[1]} already exists in {org.name}")
        return self._public(item, org, principal)

    @staticmethod
    def _item(org: Organization, module_id: str, registry: str, namespace: str, name: str, provider: str) -> Any:
        now = clock.now_iso()
        return {
            "id": module_id,
            "organization": org.key,
            "organization_id": org.id,
            "registry_name": registry,
            "namespace": namespace,
            "name": name,
            "provider": provider,
            "address": module_address(registry, namespace or org.name, name, provider),
            "created_at": now,
            "updated_at": now,
            "version": 1,
        }

    def initial_version(self, module_id: str) -> str | None:
        """The `initial-version` a branch-based module was created with (its branch's head is published as it)."""
        item = self._store.module(module_id) if looks_like(module_id, "mod") else None
        return None if item is None else item.get("initial_version")

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
        if module.vcs_repo and self._link is not None:
            self._link.release(module.id)
        self._store.delete(module.id)  # its versions and their blobs first: a deletion cut short is finished again
