"""No-code designations of private registry modules (HCP Terraform's `/organizations/:org/no-code-modules` and
`/no-code-modules/:id`, go-tfe's `RegistryNoCodeModules`): created, read, changed and deleted by who may manage the
module's organization's modules (`MANAGE_MODULES`), read by its members. A module has at most one (created with its
pointer in one transaction); its version pin names one of the module's versions. Also a module created with
`no-code: true` (go-tfe's older way): the module, then its designation. Provisioning workspaces from one is not
offered (`create-workspace` answers so)."""

from __future__ import annotations

from typing import Any

from terrace.domain import clock
from terrace.domain.errors import Conflict, Invalid, NotFound
from terrace.domain.ids import looks_like, new_id
from terrace.domain.no_code_modules import NoCodeModule, VariableOption, check_enabled, check_variable_options
from terrace.domain.principal import Principal
from terrace.domain.registry_modules import PRIVATE, RegistryModule, is_version
from terrace.services.access.authz import Action
from terrace.services.optimistic import optimistic
from terrace.services.registry.modules import RegistryModuleService
from terrace.services.registry.store import ModuleStore, Record

KIND = "nocode"


def no_code_of(record: Record) -> NoCodeModule:
    options = tuple(
        VariableOption(o["id"], o["variable_name"], o["variable_type"], tuple(o["options"]))
        for o in record.get("variable_options", [])
    )
    return NoCodeModule(record["id"], record["module_id"], record["organization"], bool(record["enabled"]),
                        record.get("version_pin", ""), options, record["created_at"], record["updated_at"])  # fmt: skip


def _with_ids(options: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"id": new_id("ncvo"), **o} for o in options]


class NoCodeModuleService:
    def __init__(self, store: ModuleStore, modules: RegistryModuleService) -> None:
        self._store, self._modules = store, modules

    def of_module(self, module: RegistryModule) -> NoCodeModule | None:
        """The designation of a module its caller has read (None: it has none)."""
        found = self._store.no_code_of(module.id)
        return no_code_of(found) if found else None

    def create(
        self, principal: Principal, organization: str, module_id: Any, attrs: dict[str, Any], options: Any
    ) -> tuple[NoCodeModule, RegistryModule]:
        if not isinstance(module_id, str) or not module_id:
            raise Invalid("registry-module is required", pointer="/data/relationships/registry-module")
        module = self._modules.get_by_id(principal, module_id, Action.MANAGE_MODULES)
        if module.registry_name != PRIVATE or module.organization_name.lower() != organization.lower():
            raise NotFound(f"registry module {module_id} not found")
        return self._designate(module, attrs, options), module

    def create_module(self, principal: Principal, organization: str, attrs: dict[str, Any]) -> RegistryModule:
        """A registry module (`POST .../registry-modules`), designated no-code at once when `no-code` is true."""
        wanted = check_enabled(attrs.get("no-code"), False)
        module = self._modules.create(principal, organization, attrs)
        if wanted:
            self._designate(module, {}, None)
        return module

    def _designate(self, module: RegistryModule, attrs: dict[str, Any], options: Any) -> NoCodeModule:
        now = clock.now_iso()
        record = {
            "id": new_id(KIND),
            "module_id": module.id,
            "organization": module.organization,
            "enabled": check_enabled(attrs.get("enabled"), True),
            "version_pin": self._pin(module, attrs.get("version-pin")),
            "variable_options": _with_ids(check_variable_options(options)) if options is not None else [],
            "created_at": now,
            "updated_at": now,
        }
        if not self._store.create_no_code(record):
            raise Conflict(f"registry module {module.address} is a no-code module already")
        return no_code_of(record)

    @staticmethod
    def _pin(module: RegistryModule, value: Any) -> str:
        if value in (None, ""):
            return ""
        if not isinstance(value, str) or not is_version(value) or value not in {v.version for v in module.versions}:
            raise Invalid(f"version-pin must be a version of {module.address}", pointer="/data/attributes/version-pin")
        return value

    def get(
        self, principal: Principal, no_code_id: str, action: Action = Action.READ_MODULES
    ) -> tuple[NoCodeModule, RegistryModule]:
        found = self._store.no_code(no_code_id) if looks_like(no_code_id, KIND) else None
        try:
            module = self._modules.get_by_id(principal, found["module_id"], action) if found else None
        except NotFound:
            module = None
        if found is None or module is None:
            raise NotFound(f"no-code module {no_code_id} not found")
        return no_code_of(found), module

    def update(
        self, principal: Principal, no_code_id: str, attrs: dict[str, Any], options: Any
    ) -> tuple[NoCodeModule, RegistryModule]:
        _, module = self.get(principal, no_code_id, Action.MANAGE_MODULES)
        pin = self._pin(module, attrs["version-pin"]) if attrs.get("version-pin") not in (None, "") else None
        checked = _with_ids(check_variable_options(options)) if options is not None else None

        def step() -> NoCodeModule:
            current = self._store.no_code(no_code_id)
            if current is None:
                raise NotFound(f"no-code module {no_code_id} not found")
            updated = {**current, "enabled": check_enabled(attrs.get("enabled"), bool(current["enabled"]))}
            if pin is not None:
                updated["version_pin"] = pin
            if checked is not None:
                updated["variable_options"] = checked
            if updated != current:
                updated["updated_at"] = clock.now_iso()
                self._store.replace_no_code(updated, current["version"])
            return no_code_of(updated)

        return optimistic(step, exhausted=f"no-code module {no_code_id} changed concurrently; retry"), module

    def delete(self, principal: Principal, no_code_id: str) -> None:
        self.get(principal, no_code_id, Action.MANAGE_MODULES)
        found = self._store.no_code(no_code_id)
        if found is not None:
            self._store.delete_no_code(found)
