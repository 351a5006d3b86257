"""Plan exports (`domain/plan_exports.py`): a finished plan's data as a Sentinel mock bundle, HCP's
`plan-exports` API.

Every operation (create, read, download, delete) needs HCP's "Download Sentinel mocks" workspace permission
(`DOWNLOAD_SENTINEL_MOCKS`: write and admin access, or custom access with `sentinel-mocks: read`), decided by the
Authorizer on the export's run; creating one also reads the plan's JSON (`READ_PLAN_JSON`). The export
is recorded `queued` and its writing requested through the events queue (`EVENT`, staged in the outbox with the
export's own write, so a failed publish is retried by the reaper's sweep); the events worker writes the
bundle (`domain/sentinel_mocks.py`) from the plan's redacted JSON and the run, stores it as a blob and marks the
export `finished` (or `errored`). An export of another organization, or of a run the caller may not read, is
NotFound; one the caller may read but not export is Forbidden. The download is a presigned GET of
the bundle while it has not expired (an hour after it finished); the reaper's sweep (`sweep_if_due`) then deletes
the bundle.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime
from typing import Any

from terrace.adapters.blobs import BlobStore
from terrace.domain import clock
from terrace.domain import plan_exports as model
from terrace.domain.errors import Conflict, Invalid, NotFound
from terrace.domain.ids import new_id
from terrace.domain.limits import PLAN_EXPORT_JSON_MAX
from terrace.domain.principal import Principal
from terrace.domain.projects import default_project_id
from terrace.domain.runs import Run
from terrace.domain.sentinel_mocks import bundle
from terrace.services.access.authz import Action
from terrace.services.optimistic import optimistic
from terrace.services.runs.plans import PlanService
from terrace.services.runs.runs import RunService
from terrace.services.runs.store import RunStore
from terrace.services.workspaces.workspaces import WorkspaceService

log = logging.getLogger("terrace.plan_exports")
EVENT = "plan_export.requested"


def requested(export_id: str) -> dict[str, Any]:
    """The event that asks the events worker to write an export's bundle."""
    return {"type": EVENT, "plan_export": export_id}


class PlanExportService:
    def __init__(
        self,
        store: RunStore,
        runs: RunService,
        plans: PlanService,
        workspaces: WorkspaceService,
        blobs: BlobStore,
        now: Callable[[], datetime] = clock.utcnow,
        json_max: int = PLAN_EXPORT_JSON_MAX,
    ) -> None:
        self._store, self._runs, self._plans, self._workspaces = store, runs, plans, workspaces
        self._blobs, self._now, self._json_max = blobs, now, json_max

    def create(self, principal: Principal, attrs: dict[str, Any], plan_id: str | None) -> model.PlanExport:
        data_type = attrs.get("data-type")
        if data_type not in model.DATA_TYPES:
            raise Invalid(
                f"data-type must be one of: {', '.join(sorted(model.DATA_TYPES))}", pointer="/data/attributes/data-type"
            )
        if not isinstance(plan_id, str) or not plan_id:
            raise Invalid("a plan is required", pointer="/data/relationships/plan")
        run = self._plans.finished_run(principal, plan_id)
        self._runs.get(principal, run.id, Action.DOWNLOAD_SENTINEL_MOCKS)
        at = clock.iso(self._now())
        export = model.PlanExport(
            id=new_id(model.PREFIX),
            organization=run.organization,
            workspace_id=run.workspace_id,
            run_id=run.id,
            plan_id=run.plan.id,
            data_type=str(data_type),
            created_at=at,
            status=model.QUEUED,
            status_timestamps={"queued-at": at},
        )
        self._store.plan_exports.create(export, requested(export.id))
        return export

    def get(self, principal: Principal, export_id: str) -> model.PlanExport:
        return model.as_seen(self._readable(principal, export_id), self._now())

    def download_url(self, principal: Principal, export_id: str, ttl_s: int) -> str:
        export = self.get(principal, export_id)
        if export.status == model.EXPIRED:
            raise NotFound(f"plan export {export_id} has expired")
        if export.status != model.FINISHED or not export.blob_key:
            raise Conflict(f"plan export {export_id} is {export.status}, not finished")
        return self._blobs.presign_get(export.blob_key, ttl_s)

    def delete(self, principal: Principal, export_id: str) -> None:
        export = self._readable(principal, export_id)
        if export.blob_key:
            self._blobs.delete(export.blob_key)
        self._store.plan_exports.delete(export)

    def _readable(self, principal: Principal, export_id: str) -> model.PlanExport:
        export = self._store.plan_exports.get(export_id) if export_id.startswith(f"{model.PREFIX}-") else None
        if export is None:
            raise NotFound(f"plan export {export_id} not found")
        try:
            self._runs.get(principal, export.run_id, Action.DOWNLOAD_SENTINEL_MOCKS)
        except NotFound as exc:
            raise NotFound(f"plan export {export_id} not found") from exc
        return export

    # the reaper's sweep ---------------------------------------------------------------------------------------
    def sweep_if_due(self) -> dict[str, int] | None:
        """Deletes the bundles of exports that expired (one query; None: none had)."""
        due = self._store.plan_exports.expiring(clock.iso(self._now()))
        for entry, key in due:
            self._blobs.delete(key)
            self._store.plan_exports.forget_expiring(entry)
        return {"plan_exports_expired": len(due)} if due else None

    # the events worker -------------------------------------------------------------------------------------
    def on_event(self, event: dict[str, Any]) -> None:
        export_id = event.get("plan_export")
        if isinstance(export_id, str):
            self.write(export_id)

    def write(self, export_id: str) -> model.PlanExport | None:
        """Writes the export's bundle (None: the export is gone); an export already written is left as it is."""
        export = self._store.plan_exports.get(export_id)
        if export is None or export.status not in (model.PENDING, model.QUEUED):
            return export
        try:
            run = self._store.load(export.run_id)
            size = run.plan.json_size
            if size is None and run.plan.json_key and (info := self._blobs.head(run.plan.json_key)) is not None:
                size = info.size  # a plan recorded before its JSON's size was
            if (size or 0) > self._json_max:
                reason = f"the plan's JSON is {size} bytes: exports are written of up to {self._json_max}"
                return self._finish(export_id, model.ERRORED, None, reason)
            data = bundle(self._plans.redacted_of(run), self._tfrun(run))
        except NotFound as exc:
            return self._finish(export_id, model.ERRORED, None, str(exc))
        except Exception:  # noqa: BLE001 - any other failure is recorded as the export's error
            log.exception("plan export %s: writing its bundle failed", export_id)
            return self._finish(export_id, model.ERRORED, None, "writing the bundle failed")
        key = model.blob_key(export_id)
        self._blobs.put(key, data, content_type="application/gzip")
        written = self._finish(export_id, model.FINISHED, key, None)
        if written is None or written.blob_key != key:  # deleted (or written by another worker) meanwhile
            self._blobs.delete(key)
        return written

    def _tfrun(self, run: Run) -> dict[str, Any]:
        ws = self._workspaces.load(run.workspace_id)
        org = self._workspaces.organization_of(ws)
        project = (ws.project_id or default_project_id(org.key), self._workspaces.project_name_of(ws))
        return model.tfrun_values(run, ws, org.name, project)

    def _finish(self, export_id: str, status: str, key: str | None, error: str | None) -> model.PlanExport | None:
        def step() -> model.PlanExport | None:
            export = self._store.plan_exports.get(export_id)
            if export is None or export.status not in (model.PENDING, model.QUEUED):
                return export
            export.status, export.blob_key, export.error_message = status, key, error
            export.status_timestamps[f"{status}-at"] = clock.iso(self._now())
            self._store.plan_exports.save(export)
            return export

        return optimistic(step, exhausted=f"plan export {export_id} changed while it was written")
