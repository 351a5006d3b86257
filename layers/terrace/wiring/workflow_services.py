"""Use cases (services/workflows/): the workflows that span service areas, built on first use from the areas'
services (the reads behind the UI's pages: `page_services.py`). Mixed into `bootstrap.Container`; no area's service
takes one of these except through a port of its own (the reaper's `Sweep`)."""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING

from terrace.adapters.blobs import BlobStore
from terrace.adapters.events import EventPublisher
from terrace.adapters.table import Table

if TYPE_CHECKING:
    from terrace.adapters.forge import Forge
    from terrace.adapters.hcl_reader import HclReader
    from terrace.config import Settings
    from terrace.services.access.accounts import AccountService
    from terrace.services.access.organizations import OrganizationService
    from terrace.services.access.projects import ProjectService
    from terrace.services.access.store import AccessStore
    from terrace.services.admin.site import SiteAdminService
    from terrace.services.audit.store import AuditStore
    from terrace.services.hyok.key_test import KeyTester
    from terrace.services.hyok.state_keys import HyokStateKeys
    from terrace.services.hyok.store import HyokStore
    from terrace.services.notifications.configurations import NotificationConfigurations
    from terrace.services.notifications.store import NotificationStore
    from terrace.services.policies.policy_sets import PolicySetService
    from terrace.services.policies.store import PolicyStore
    from terrace.services.policies.store_evaluations import EvaluationStore
    from terrace.services.policies.versions import PolicySetVersionService
    from terrace.services.registry.module_versions import ModuleVersionService
    from terrace.services.registry.modules import RegistryModuleService
    from terrace.services.registry.no_code_modules import NoCodeModuleService
    from terrace.services.registry.store import ModuleStore
    from terrace.services.registry.store_providers import ProviderStore
    from terrace.services.runs.assessments import AssessmentService
    from terrace.services.runs.configuration_versions import ConfigurationVersionService
    from terrace.services.runs.job_uploads import JobUploads
    from terrace.services.runs.module_test_runs import ModuleTestRunService
    from terrace.services.runs.run_queries import RunQueries
    from terrace.services.runs.runs import RunService
    from terrace.services.runs.store import RunStore
    from terrace.services.state.store import StateStore
    from terrace.services.state.versions import StateVersionService
    from terrace.services.vcs.commit_files import CommitFiles
    from terrace.services.vcs.connections import RepositoryConnections
    from terrace.services.workflows.auto_destroy import AutoDestroy
    from terrace.services.workflows.explorer import Explorer
    from terrace.services.workflows.explorer_feed import ExplorerFeed
    from terrace.services.workflows.hyok_jobs import HyokJobs
    from terrace.services.workflows.module_tests import ModuleTests
    from terrace.services.workflows.no_code_provisioning import NoCodeProvisioning
    from terrace.services.workflows.organization_deletion import OrganizationDeletion
    from terrace.services.workflows.project_deletion import ProjectDeletion
    from terrace.services.workflows.purge import Purge
    from terrace.services.workflows.retention_sweep import RetentionSweep
    from terrace.services.workflows.run_trigger_fanout import RunTriggerFanout
    from terrace.services.workflows.state_rollback import StateRollback
    from terrace.services.workflows.store_explorer import ExplorerStore
    from terrace.services.workflows.vcs_modules import ModuleSources
    from terrace.services.workflows.vcs_sources import PolicySetSources
    from terrace.services.workflows.workspace_deletion import WorkspaceDeletion
    from terrace.services.workspaces.change_requests import ChangeRequestService
    from terrace.services.workspaces.locking import LockService
    from terrace.services.workspaces.module_test_workspaces import ModuleTestWorkspaces
    from terrace.services.workspaces.retention import RetentionPolicyService
    from terrace.services.workspaces.run_triggers import RunTriggerService
    from terrace.services.workspaces.store import WorkspaceAreaStore
    from terrace.services.workspaces.variables import VariableService
    from terrace.services.workspaces.varsets import VariableSetService
    from terrace.services.workspaces.workspaces import WorkspaceService


class WorkflowServices:
    table: Table
    blobs: BlobStore
    publisher: EventPublisher
    # from the areas
    accounts: AccountService
    access_store: AccessStore
    organizations: OrganizationService
    site_admin: SiteAdminService
    audit_store: AuditStore
    hyok_store: HyokStore  # wiring/hyok_services.py
    hyok_state_keys: HyokStateKeys  # wiring/hyok_services.py
    hyok_key_tester: KeyTester  # wiring/hyok_services.py
    job_uploads: JobUploads  # wiring/runner_services.py
    workspaces: WorkspaceService
    locks: LockService
    retention_policies: RetentionPolicyService
    state_versions: StateVersionService
    state_store: StateStore
    varsets: VariableSetService
    projects: ProjectService
    configuration_versions: ConfigurationVersionService
    runs: RunService
    run_store: RunStore
    assessments: AssessmentService  # wiring/run_services.py
    run_triggers: RunTriggerService
    workspace_store: WorkspaceAreaStore  # wiring/workspace_services.py
    notification_store: NotificationStore
    notification_configurations: NotificationConfigurations
    policy_store: PolicyStore  # wiring/policy_services.py
    policy_evaluation_store: EvaluationStore  # wiring/policy_services.py
    registry_module_store: ModuleStore  # wiring/registry_services.py
    registry_provider_store: ProviderStore  # wiring/registry_services.py
    repository_connections: RepositoryConnections  # wiring/vcs_services.py
    forge: Forge
    commit_files: CommitFiles  # wiring/vcs_services.py
    policy_sets: PolicySetService  # wiring/policy_services.py
    policy_set_versions: PolicySetVersionService  # wiring/policy_services.py
    run_queries: RunQueries
    change_requests: ChangeRequestService  # wiring/workspace_services.py
    hcl_reader: HclReader  # wiring/registry_services.py: a configuration's HCL is read as uploaded modules are
    registry_modules: RegistryModuleService  # wiring/registry_services.py
    module_versions: ModuleVersionService  # wiring/registry_services.py
    module_test_runs: ModuleTestRunService  # wiring/run_services.py
    variables: VariableService  # wiring/workspace_services.py
    module_test_workspaces: ModuleTestWorkspaces  # wiring/workspace_services.py
    no_code_modules: NoCodeModuleService  # wiring/registry_services.py
    settings: Settings

    @cached_property
    def no_code_provisioning(self) -> NoCodeProvisioning:
        """Workspaces provisioned from no-code modules, and their upgrades."""
        from terrace.services.workflows.no_code_provisioning import NoCodeProvisioning

        return NoCodeProvisioning(
            self.no_code_modules,
            self.module_versions,
            self.organizations,
            self.workspaces,
            self.variables,
            self.configuration_versions,
            self.runs,
            self.settings.public_url,
        )

    @cached_property
    def hyok_jobs(self) -> HyokJobs:
        """What an agent working a Hold Your Own Key workspace's job gets to reach its customer's key."""
        from terrace.services.workflows.hyok_jobs import HyokJobs

        return HyokJobs(
            self.job_uploads, self.workspaces, self.state_versions, self.hyok_state_keys, self.hyok_key_tester
        )

    @cached_property
    def purge(self) -> Purge:
        from terrace.services.workflows.purge import Purge

        return Purge(
            self.blobs,
            self.accounts,
            self.access_store,
            self.state_store,
            self.varsets,
            self.workspace_store,
            self.notification_store,
            (self.policy_store, self.policy_evaluation_store, self.registry_module_store, self.registry_provider_store),
            run_store=self.run_store,
            audit_store=self.audit_store,
            hyok_store=self.hyok_store,
            vcs=self.repository_connections,
            explorer_store=self.explorer_store,
        )

    @cached_property
    def explorer_store(self) -> ExplorerStore:
        """The explorer's summaries, one per workspace: their keys and items."""
        from terrace.services.workflows.store_explorer import ExplorerStore

        return ExplorerStore(self.table)

    @cached_property
    def explorer(self) -> Explorer:
        from terrace.services.workflows.explorer import Explorer

        return Explorer(
            self.explorer_store,
            self.organizations,
            self.workspaces,
            self.run_queries,
            self.assessments,
            self.change_requests,
        )

    @cached_property
    def explorer_feed(self) -> ExplorerFeed:
        """Subscribed to `state.uploaded` and `run.status_changed` with the other events (`state_services.py`)."""
        from terrace.services.workflows.explorer_feed import ExplorerFeed

        return ExplorerFeed(
            self.explorer_store,
            self.workspaces,
            self.state_store,
            self.run_store,
            self.configuration_versions,
            self.blobs,
            self.hcl_reader,
        )

    @cached_property
    def module_tests(self) -> ModuleTests:
        """A private module's test runs and test variables (terraform test -cloud-run)."""
        from terrace.services.workflows.module_tests import ModuleTests

        return ModuleTests(
            self.registry_modules, self.module_test_workspaces, self.module_test_runs, self.variables, self.purge
        )

    @cached_property
    def workspace_deletion(self) -> WorkspaceDeletion:
        from terrace.services.workflows.workspace_deletion import WorkspaceDeletion

        return WorkspaceDeletion(self.workspaces, self.runs, self.purge, self.site_admin)

    @cached_property
    def organization_deletion(self) -> OrganizationDeletion:
        from terrace.services.workflows.organization_deletion import OrganizationDeletion

        return OrganizationDeletion(
            self.organizations, self.workspaces, self.purge, self.site_admin, self.module_test_workspaces
        )

    @cached_property
    def project_deletion(self) -> ProjectDeletion:
        from terrace.services.workflows.project_deletion import ProjectDeletion

        return ProjectDeletion(self.projects, self.workspaces, self.varsets, self.notification_configurations)

    @cached_property
    def auto_destroy(self) -> AutoDestroy:
        """The reaper's auto-destroy sweep (`runner_services.py: reaper`), subscribed to `run.status_changed` with the
        other events (`state_services.py: events`); its notices go out on the events queue."""
        from terrace.services.workflows.auto_destroy import AutoDestroy

        return AutoDestroy(
            self.workspaces, self.runs, self.run_store, self.configuration_versions, self.publisher.publish
        )

    @cached_property
    def policy_set_sources(self) -> PolicySetSources:
        """Policy set versions from a set's repository: subscribed in `vcs_services.py: subscribe_vcs`."""
        from terrace.services.workflows.vcs_sources import PolicySetSources

        return PolicySetSources(self.repository_connections, self.forge, self.policy_sets, self.policy_set_versions,
                                self.commit_files)  # fmt: skip

    @cached_property
    def module_sources(self) -> ModuleSources:
        """Registry module versions from a module's repository: its tags (subscribed in `vcs_services.py`) and the
        commits of a branch-based one (`POST .../versions`)."""
        from terrace.services.workflows.vcs_modules import ModuleSources

        return ModuleSources(self.repository_connections, self.forge, self.registry_modules, self.module_versions,
                             self.commit_files)  # fmt: skip

    @cached_property
    def run_trigger_fanout(self) -> RunTriggerFanout:
        """Subscribed to `run.status_changed` with the other events (`state_services.py: events`)."""
        from terrace.services.workflows.run_trigger_fanout import RunTriggerFanout

        return RunTriggerFanout(
            self.run_store, self.runs, self.workspaces, self.configuration_versions, self.run_triggers
        )

    @cached_property
    def state_rollback(self) -> StateRollback:
        from terrace.services.workflows.state_rollback import StateRollback

        return StateRollback(self.workspaces, self.locks, self.state_versions)

    @cached_property
    def retention_sweep(self) -> RetentionSweep:
        from terrace.services.workflows.retention_sweep import RetentionSweep
        from terrace.services.workflows.store import SweepClaimStore

        return RetentionSweep(
            SweepClaimStore(self.table),
            self.blobs,
            self.organizations,
            self.workspaces,
            self.retention_policies,
            self.configuration_versions,
            self.run_store,
            self.state_store,
        )
