"""A private registry module's tests (`domain/module_tests.py`): the use case across the registry (the module,
addressed as `organizations/:org/tests/registry-modules/:registry/:namespace/:name/:provider`), the workspaces
area (the module's test workspace and its variables, the module's test variables) and the runs area (test
configuration versions and test runs, `services/runs/module_test_runs.py`).

Every call first reads the module as one who manages the organization's modules (404 to anyone else, as for an
absent module); writes make the module's test workspace the first time, reads never do (no test workspace: no
test run, no test variable). A module's deletion deletes its test workspace with all it holds (`forget`).
"""

from __future__ import annotations

import builtins
from typing import Any

from terrace.domain.configuration_versions import ConfigurationVersion
from terrace.domain.errors import NotFound
from terrace.domain.principal import Principal
from terrace.domain.registry_modules import RegistryModule
from terrace.domain.runs import Run
from terrace.domain.variables import Variable
from terrace.domain.workspace import Workspace
from terrace.services.access.authz import Action
from terrace.services.registry.modules import RegistryModuleService
from terrace.services.runs.module_test_runs import ModuleTestRunService
from terrace.services.workflows.purge import Purge
from terrace.services.workspaces.module_test_workspaces import ModuleTestWorkspaces
from terrace.services.workspaces.variables import VariableService

Address = tuple[str, str, str, str]  # registry name, namespace, name, provider


class ModuleTests:
    def __init__(
        self,
        modules: RegistryModuleService,
        workspaces: ModuleTestWorkspaces,
        test_runs: ModuleTestRunService,
        variables: VariableService,
        purge: Purge,
    ) -> None:
        self._modules, self._workspaces, self._runs = modules, workspaces, test_runs
        self._variables, self._purge = variables, purge

    def _module(self, principal: Principal, organization: str, address: Address) -> RegistryModule:
        return self._modules.get(principal, organization, address, Action.MANAGE_MODULES)

    def _workspace(self, principal: Principal, organization: str, address: Address, *, create: bool) -> Workspace:
        module = self._module(principal, organization, address)
        ws = self._workspaces.of_module(module.organization, module.id, module.name, create=create)
        if ws is None:
            raise NotFound(f"registry module {module.address} has no tests yet")
        return ws

    def _existing(self, principal: Principal, organization: str, address: Address) -> Workspace | None:
        module = self._module(principal, organization, address)
        return self._workspaces.of_module(module.organization, module.id, module.name)

    # test configuration versions and test runs ---------------------------------------------------
    def create_configuration(
        self, principal: Principal, organization: str, address: Address
    ) -> tuple[ConfigurationVersion, str | None]:
        """A pending test configuration version and its upload URL (for its creator only)."""
        cv = self._runs.configuration(principal, self._workspace(principal, organization, address, create=True))
        return cv, self._runs.upload_url(cv)

    def create_run(
        self, principal: Principal, organization: str, address: Address, attrs: dict[str, Any], cv_id: str | None
    ) -> Run:
        ws = self._workspace(principal, organization, address, create=True)
        return self._runs.create(principal, ws, attrs, cv_id)

    def runs(self, principal: Principal, organization: str, address: Address) -> builtins.list[Run]:
        return self._runs.list(principal, self._existing(principal, organization, address))

    def run(self, principal: Principal, organization: str, address: Address, test_run_id: str) -> Run:
        return self._runs.get(principal, self._existing(principal, organization, address), test_run_id)

    def cancel(self, principal: Principal, organization: str, address: Address, test_run_id: str) -> Run:
        return self._runs.cancel(principal, self._existing(principal, organization, address), test_run_id)

    def force_cancel(self, principal: Principal, organization: str, address: Address, test_run_id: str) -> Run:
        return self._runs.force_cancel(principal, self._existing(principal, organization, address), test_run_id)

    # test variables ------------------------------------------------------------------------------
    def variables(self, principal: Principal, organization: str, address: Address) -> builtins.list[Variable]:
        ws = self._existing(principal, organization, address)
        return [] if ws is None else self._variables.list(principal, ws)

    def variable(self, principal: Principal, organization: str, address: Address, var_id: str) -> Variable:
        ws = self._existing(principal, organization, address)
        if ws is None:
            raise NotFound(f"variable {var_id} not found")
        return self._variables.get(principal, ws, var_id)

    def create_variable(
        self, principal: Principal, organization: str, address: Address, attrs: dict[str, Any]
    ) -> Variable:
        return self._variables.create(principal, self._workspace(principal, organization, address, create=True), attrs)

    def update_variable(
        self, principal: Principal, organization: str, address: Address, var_id: str, attrs: dict[str, Any]
    ) -> Variable:
        ws = self._existing(principal, organization, address)
        if ws is None:
            raise NotFound(f"variable {var_id} not found")
        return self._variables.update(principal, ws, var_id, attrs)

    def delete_variable(self, principal: Principal, organization: str, address: Address, var_id: str) -> None:
        ws = self._existing(principal, organization, address)
        if ws is None:
            raise NotFound(f"variable {var_id} not found")
        self._variables.delete(principal, ws, var_id)

    # deletion ------------------------------------------------------------------------------------
    def forget(self, module: RegistryModule) -> None:
        """A deleted module's test workspace goes with everything it holds (its runs ended by the purge)."""
        ws = self._workspaces.of_module(module.organization, module.id, module.name)
        if ws is None:
            return
        self._purge.workspace_contents(ws.id, ws.organization)
        self._workspaces.drop(ws.id)
