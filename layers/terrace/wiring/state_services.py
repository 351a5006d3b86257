"""State (services/state/): state versions, their index and backing data, and the events that index uploads.

Mixed into `bootstrap.Container`: each service is built on first use from the container's adapters and its
other services (what this area takes from the others is declared below as plain attributes)."""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property
from typing import TYPE_CHECKING, Any

from terrace.adapters.blobs import BlobStore
from terrace.adapters.events import EventPublisher
from terrace.adapters.table import Table
from terrace.config import Settings

if TYPE_CHECKING:
    from terrace.services.access.organizations import OrganizationService
    from terrace.services.events import EventService
    from terrace.services.hyok.state_keys import HyokStateKeys
    from terrace.services.policies.versions import PolicySetVersionService
    from terrace.services.registry.module_versions import ModuleVersionService
    from terrace.services.runs.assessments import AssessmentService
    from terrace.services.runs.configuration_versions import ConfigurationVersionService
    from terrace.services.runs.plan_exports import PlanExportService
    from terrace.services.state.backing_data import BackingDataService
    from terrace.services.state.http_backend import HttpBackendLocks
    from terrace.services.state.index import StateIndex
    from terrace.services.state.resource_history import ResourceHistory
    from terrace.services.state.store import StateStore
    from terrace.services.state.versions import StateVersionService
    from terrace.services.workflows.auto_destroy import AutoDestroy
    from terrace.services.workflows.explorer_feed import ExplorerFeed
    from terrace.services.workflows.run_trigger_fanout import RunTriggerFanout
    from terrace.services.workspaces.locking import LockService
    from terrace.services.workspaces.workspaces import WorkspaceService


class StateServices:
    settings: Settings
    table: Table
    blobs: BlobStore
    publisher: EventPublisher
    # from the other areas
    organizations: OrganizationService
    workspaces: WorkspaceService
    locks: LockService
    configuration_versions: ConfigurationVersionService
    run_trigger_fanout: RunTriggerFanout  # a use case (workflow_services.py)
    auto_destroy: AutoDestroy  # a use case (workflow_services.py)
    explorer_feed: ExplorerFeed  # a use case (workflow_services.py)
    assessments: AssessmentService  # wiring/run_services.py
    plan_exports: PlanExportService  # wiring/run_services.py
    policy_set_versions: PolicySetVersionService
    module_versions: ModuleVersionService
    provider_file_landed: Callable[[str], None]  # wiring/registry_services.py
    subscribe_policies: Callable[[EventService], None]
    subscribe_task_stages: Callable[[EventService], None]
    subscribe_notifications: Callable[[EventService], None]
    subscribe_vcs: Callable[[EventService], None]
    subscribe_hyok: Callable[[EventService], None]
    hyok_state_keys: HyokStateKeys  # wiring/hyok_services.py: the state area's HyokKeys port

    @cached_property
    def resource_history(self) -> ResourceHistory:
        """A resource's changes across its workspace's state versions (the UI's resource history)."""
        from terrace.services.state.resource_history import ResourceHistory

        return ResourceHistory(self.workspaces, self.state_versions)

    @cached_property
    def state_store(self) -> StateStore:
        """The state area's storage: versions, outputs and the resource index (the only one that knows the table)."""
        from terrace.services.state.store import StateStore

        return StateStore(self.table, self.blobs)

    @cached_property
    def state_index(self) -> StateIndex:
        from terrace.services.state.index import StateIndex

        return StateIndex(self.state_store)

    @cached_property
    def state_versions(self) -> StateVersionService:
        from terrace.services.state.versions import StateVersionService

        return StateVersionService(
            self.state_store,
            self.blobs,
            self.settings,
            self.workspaces,
            self.state_index,
            self.organizations,
            self.publisher,
            self.hyok_state_keys,
        )

    @cached_property
    def http_backend_locks(self) -> HttpBackendLocks:
        from terrace.services.state.http_backend import HttpBackendLocks

        return HttpBackendLocks(self.organizations, self.workspaces, self.locks)

    @cached_property
    def state_backing_data(self) -> BackingDataService:
        from terrace.services.state.backing_data import BackingDataService

        return BackingDataService(self.state_store, self.blobs, self.state_versions, self.workspaces)

    @cached_property
    def events(self) -> EventService:
        from terrace.services.events import BLOB_LANDED, EventService
        from terrace.services.policies.versions import UPLOAD_PREFIX
        from terrace.services.registry.module_versions import UPLOAD_PREFIX as MODULE_UPLOAD_PREFIX
        from terrace.services.registry.provider_versions import UPLOAD_PREFIX as PROVIDER_UPLOAD_PREFIX
        from terrace.services.runs.plan_exports import EVENT as PLAN_EXPORT
        from terrace.services.workflows.run_trigger_fanout import RUN_STATUS_CHANGED

        events = EventService()

        def landed(event: dict[str, Any]) -> None:
            key = str(event.get("key", ""))
            if key.startswith("config/"):
                self.configuration_versions.landed(key)
            elif key.startswith(UPLOAD_PREFIX):
                self.policy_set_versions.landed(key)
            elif key.startswith(MODULE_UPLOAD_PREFIX):
                self.module_versions.landed(key)
            elif key.startswith(PROVIDER_UPLOAD_PREFIX):
                self.provider_file_landed(key)  # wiring/registry_services.py
            else:
                self.state_versions.finalize_uploaded(key)

        events.subscribe(BLOB_LANDED, landed)
        events.subscribe("state.uploaded", lambda event: self.state_versions.index_uploaded(event))
        events.subscribe("state.indexed", lambda event: self.explorer_feed.on_state_indexed(event))
        events.subscribe(RUN_STATUS_CHANGED, lambda event: self.run_trigger_fanout.on_event(event))
        events.subscribe(RUN_STATUS_CHANGED, lambda event: self.auto_destroy.on_run_status(event))
        events.subscribe(RUN_STATUS_CHANGED, lambda event: self.assessments.on_run_status(event))
        events.subscribe(RUN_STATUS_CHANGED, lambda event: self.explorer_feed.on_run_status(event))
        events.subscribe(PLAN_EXPORT, lambda event: self.plan_exports.on_event(event))
        self.subscribe_policies(events)
        self.subscribe_task_stages(events)  # wiring/task_stage_services.py
        self.subscribe_notifications(events)  # wiring/notification_services.py
        self.subscribe_vcs(events)  # wiring/vcs_services.py
        self.subscribe_hyok(events)  # wiring/hyok_services.py
        return events
