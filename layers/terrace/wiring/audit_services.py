"""The audit trail (services/audit/): its store, the one recorder the app's audit middleware feeds, the reads, and the
daily export to the blob store (a sweep of the reaper: `runner_services.py`).

Mixed into `bootstrap.Container`. The recorder's organization lookup is filled here: an organization named in
the path, or the organization of the workspace, run or state version a path parameter names."""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING

from terrace.adapters.blobs import BlobStore
from terrace.adapters.log_sink import LogSink
from terrace.adapters.table import Table
from terrace.config import Settings

if TYPE_CHECKING:
    from terrace.services.access.authz import Authorizer
    from terrace.services.access.organizations import OrganizationService
    from terrace.services.audit.export import AuditExport
    from terrace.services.audit.recorder import AuditRecorder
    from terrace.services.audit.store import AuditStore
    from terrace.services.audit.trail import AuditTrail
    from terrace.services.runs.store import RunStore
    from terrace.services.state.store import StateStore
    from terrace.services.workspaces.store import WorkspaceAreaStore


class AuditServices:
    settings: Settings
    table: Table
    blobs: BlobStore
    audit_log_sink: LogSink | None
    # from the areas
    authz: Authorizer
    organizations: OrganizationService
    workspace_store: WorkspaceAreaStore
    run_store: RunStore
    state_store: StateStore

    @cached_property
    def audit_store(self) -> AuditStore:
        from terrace.services.audit.store import AuditStore

        return AuditStore(self.table, self.settings.audit_retention_days)

    @cached_property
    def audit_recorder(self) -> AuditRecorder:
        from terrace.services.audit.recorder import AuditRecorder

        return AuditRecorder(self.audit_store, self._organization_of)

    @cached_property
    def audit_trail(self) -> AuditTrail:
        from terrace.services.audit.trail import AuditTrail

        return AuditTrail(self.authz, self.organizations, self.audit_store, self.audit_recorder)

    @cached_property
    def audit_export(self) -> AuditExport:
        from terrace.services.audit.export import AuditExport

        return AuditExport(
            self.audit_store,
            self.blobs,
            self.organizations,
            self.settings.audit_retention_days,
            log_sink=self.audit_log_sink,
        )

    def _organization_of(self, parameter: str, value: str) -> str | None:
        """The key of the organization a path parameter names (None: it names none, or nothing that exists)."""
        from terrace.domain.errors import NotFound
        from terrace.domain.ids import looks_like
        from terrace.services.audit.recorder import ORGANIZATION_PARAMS

        try:
            if parameter in ORGANIZATION_PARAMS:
                return self.organizations.lookup(value).key
            if looks_like(value, "ws"):
                workspace = self.workspace_store.workspaces.find(value)
                return workspace.organization if workspace else None
            if looks_like(value, "run"):
                return self.run_store.load(value).organization
            if looks_like(value, "sv"):
                version = self.state_store.find(value)
                return self._organization_of("workspace_id", version.workspace_id) if version else None
        except NotFound:
            return None
        return None
