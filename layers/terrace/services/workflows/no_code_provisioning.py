"""No-code provisioning (HCP Terraform's `POST /no-code-modules/:id/workspaces` and `.../workspaces/:ws/upgrade`):
the use case across the registry (the no-code module, its pinned version and that version's inputs and outputs),
the workspaces area (the workspace and its variables) and the runs area (its configuration version and run).

Who may deploy is decided in `services/access/authz.py` (`DEPLOY_NO_CODE_MODULES`: who may create workspaces,
never an organization token); the module is read as any member reads it (a disabled designation deploys nothing).
The workspace's configuration is generated (`domain/no_code_provisioning.py`): a root module calling the pinned
version from this server's private registry, uploaded as its configuration version, and a run of it queued as its
creator's (the workspace's auto-apply applies it if they may apply). An upgrade runs the module's version pinned
now, with the variables sent (changed or added), as a new run that waits for its confirmation unless auto-apply;
a workspace holding a terraform variable whose key is no HCL identifier (the variables API takes any key) is
refused (422) before anything is written, as provisioning refuses such a key: only identifiers are written into
the generated configuration, and no value is.
"""

from __future__ import annotations

import dataclasses
from typing import Any
from urllib.parse import urlsplit

from terrace.domain import no_code_provisioning as provisioning
from terrace.domain import tool_versions
from terrace.domain.errors import Invalid, NotFound
from terrace.domain.no_code_modules import NoCodeModule
from terrace.domain.principal import Principal
from terrace.domain.registry_modules import VERSION_OK, ModuleVersion, RegistryModule, registry_hostname
from terrace.domain.runs import Run
from terrace.domain.workspace import Workspace
from terrace.services.access.authz import Action
from terrace.services.access.organizations import OrganizationService
from terrace.services.registry.module_versions import ModuleVersionService
from terrace.services.registry.no_code_modules import NoCodeModuleService
from terrace.services.runs.configuration_versions import ConfigurationVersionService
from terrace.services.runs.runs import RunService
from terrace.services.workspaces.variables import VariableService, fill_variable
from terrace.services.workspaces.workspaces import WorkspaceService

# the attributes of a provisioning request that are the workspace's own (the rest are refused by name); each checked
# as the workspace API checks it (`iac-platform`: the tool its runs use, else the deployment's default for its version)
WORKSPACE_ATTRIBUTES = ("name", "description", "auto-apply", "execution-mode", "agent-pool-id", "terraform-version",
                        "source-name", "source-url", tool_versions.TOOL_ATTRIBUTE)  # fmt: skip


class NoCodeProvisioning:
    def __init__(
        self,
        no_code_modules: NoCodeModuleService,
        module_versions: ModuleVersionService,
        organizations: OrganizationService,
        workspaces: WorkspaceService,
        variables: VariableService,
        configurations: ConfigurationVersionService,
        runs: RunService,
        public_url: str,
    ) -> None:
        self._no_code, self._versions, self._orgs = no_code_modules, module_versions, organizations
        self._workspaces, self._variables, self._cvs, self._runs = workspaces, variables, configurations, runs
        self._host = registry_hostname(urlsplit(public_url).netloc)  # a host terraform reads as one (a dot)

    def _deployable(self, principal: Principal, no_code_id: str) -> tuple[NoCodeModule, RegistryModule, ModuleVersion]:
        ncm, module = self._no_code.get(principal, no_code_id)
        self._orgs.get(principal, module.organization_name, Action.DEPLOY_NO_CODE_MODULES)
        if not ncm.enabled:
            raise Invalid(f"no-code provisioning of {module.address} is disabled")
        wanted = ncm.version_pin
        version = next((v for v in module.versions if v.status == VERSION_OK and v.version == wanted), None) or (
            None if wanted else next((v for v in module.versions if v.status == VERSION_OK), None)
        )
        if version is None:
            raise Invalid(f"{module.address} has no published version {wanted or ''} to provision".replace("  ", " "))
        return ncm, module, version

    def create_workspace(
        self, principal: Principal, no_code_id: str, attrs: dict[str, Any], project_id: str | None, raw_vars: Any
    ) -> Workspace:
        ncm, module, version = self._deployable(principal, no_code_id)
        unknown = sorted(set(attrs) - set(WORKSPACE_ATTRIBUTES))
        if unknown:
            raise Invalid(f"unknown attribute {', '.join(unknown)}", pointer=f"/data/attributes/{unknown[0]}")
        if attrs.get("execution-mode") == "local":  # the server deploys it: its runs execute here or on an agent
            raise Invalid("a no-code workspace's runs execute remotely or on an agent, not locally",
                          pointer="/data/attributes/execution-mode")  # fmt: skip
        variables = provisioning.check_vars(raw_vars)
        for var in variables:  # every variable's own rules before the workspace exists (nothing half made)
            fill_variable({}, var, creating=True, encrypt=lambda value: value)
        docs = self._versions.docs(version)
        provisioning.check_inputs(variables, docs["inputs"], ncm.variable_options)
        ws = self._workspaces.create(principal, module.organization_name, attrs, project_id=project_id)
        if self._workspaces.execution_mode(ws) == "local":  # an inherited local default: HCP's no-code default
            ws = self._workspaces.update(principal, ws, {"execution-mode": "remote"})
        ws = self._record(ws, ncm, module, version)
        for var in variables:
            self._variables.create(principal, ws, var)
        self._queue(principal, ws, module, version, variables, docs["outputs"], "Provisioned from a no-code module")
        return self._workspaces.load(ws.id)

    def upgrade(
        self, principal: Principal, no_code_id: str, workspace_id: str, raw_vars: Any
    ) -> tuple[Run, Workspace, str]:
        """A run of the module's version pinned now in a workspace provisioned from it (404 for any other): the run,
        the workspace and its organization's name."""
        ncm, module, version = self._deployable(principal, no_code_id)
        ws = self._workspaces.get(principal, workspace_id, Action.QUEUE_RUN)
        if ws.extra.get("no-code-module-id") != ncm.id:
            raise NotFound(f"workspace {workspace_id} was not provisioned from no-code module {no_code_id}")
        sent = provisioning.check_vars(raw_vars)
        provisioning.check_inputs(sent, [], ncm.variable_options)
        listed = self._variables.list(principal, ws)
        bad = provisioning.unpassable([{"key": v.key, "category": v.category} for v in listed])
        if bad:  # before anything is written: the generated configuration passes each one to the module by name
            raise Invalid(f"the workspace's terraform variable {bad[0]!r} cannot be a module argument (a letter or "
                          "_, then letters, digits, _ and -): rename or delete it to upgrade",
                          pointer=provisioning.POINTER)  # fmt: skip
        current = {(v.key, v.category): v for v in listed}
        for var in sent:
            found = current.get((var["key"], var["category"]))
            if found is None:
                self._variables.create(principal, ws, var)
            else:
                self._variables.update(principal, ws, found.id, var)
        variables = [{"key": v.key, "category": v.category, "sensitive": v.sensitive, "hcl": v.hcl, "value": v.value}
                     for v in self._variables.list(principal, ws)]  # fmt: skip
        docs = self._versions.docs(version)
        ws = self._record(ws, ncm, module, version)
        run = self._queue(principal, ws, module, version, variables, docs["outputs"], "Upgrade of a no-code module")
        return run, ws, self._workspaces.organization_of(ws).name

    def upgrade_run(
        self, principal: Principal, no_code_id: str, workspace_id: str, run_id: str, *, confirm: bool = False
    ) -> tuple[Run, Workspace, str]:
        """An upgrade's run (`GET .../upgrade/:run_id`, its plan's status), or its confirmation (`confirm`: the
        run applied, as confirming any run); 404 unless the run is the workspace's and the workspace the module's."""
        ncm, _ = self._no_code.get(principal, no_code_id)
        ws = self._workspaces.get(principal, workspace_id)
        run = self._runs.get(principal, run_id) if ws.extra.get("no-code-module-id") == ncm.id else None
        if run is None or run.workspace_id != ws.id:
            raise NotFound(f"workspace upgrade {run_id} not found")
        if confirm:
            run = self._runs.apply(principal, run.id)
        return run, ws, self._workspaces.organization_of(ws).name

    def module_variables(self, principal: Principal, no_code_id: str, version: str) -> list[dict[str, Any]]:
        """go-tfe's `ReadVariables`: the inputs of one of the module's published versions, each with the options
        the designation gives it (`GET /no-code-modules/:id/versions/:version/module-variables`)."""
        ncm, module = self._no_code.get(principal, no_code_id)
        found = next((v for v in module.versions if v.version == version and v.status == VERSION_OK), None)
        if found is None:
            raise NotFound(f"{module.address} has no published version {version}")
        options = {o.variable_name: list(o.options) for o in ncm.variable_options}
        return [{**i, "options": options.get(str(i.get("name")), [])} for i in self._versions.docs(found)["inputs"]]

    def _record(self, ws: Workspace, ncm: NoCodeModule, module: RegistryModule, version: ModuleVersion) -> Workspace:
        source_id = f"{module.registry_name}/{module.namespace}/{module.name}/{module.provider}/{version.version}"
        extra = provisioning.Provisioned(ncm.id, version.version, source_id).extra()
        return self._workspaces.mutate(ws.id, lambda cur: dataclasses.replace(cur, extra={**cur.extra, **extra}))

    def _queue(
        self,
        principal: Principal,
        ws: Workspace,
        module: RegistryModule,
        version: ModuleVersion,
        variables: list[dict[str, Any]],
        outputs: list[dict[str, Any]],
        message: str,
    ) -> Run:
        source = f"{self._host}/{module.namespace}/{module.name}/{module.provider}"
        main_tf = provisioning.root_module(source, version.version, module.name, variables, outputs)
        cv = self._cvs.create_generated(principal, ws, provisioning.configuration_archive(main_tf), provisioning.SOURCE)
        return self._runs.create(principal, ws, {"message": f"{message}: {module.address} {version.version}"}, cv.id)
