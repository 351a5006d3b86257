"""The data retention sweep: deletes backing data older than each workspace's effective `delete-older` policy.
A workflow across the workspaces area (policies, locks), the state area (state versions) and the runs area
(configuration versions, plan files, logs).

Run by the reaper (`services/runs/reaper.py`: every minute on AWS, every second locally), at most once per
`SWEEP_INTERVAL_S` across all processes (a conditional write on one table item claims each sweep). For every
workspace whose own policy, or else its organization's, is `delete-older-than-n-days = N`, everything created
more than N days before the sweep's clock goes, as TFE documents for backing data:
- state versions: the state file and its JSON are deleted, the record stays with its backing data `deleted`
  (`backing_data_permanently_deleted`); never the workspace's current state version, nor a pending one;
- configuration versions: the archive is deleted (backing data `deleted`); never the latest uploaded one, nor
  one a run that has not ended uses;
- runs that have ended: their plan files (plan.bin, plan.json) are deleted and each phase's archived log is
  replaced by a one-line note saying so (log readers keep working).
A locked workspace (a user's lock or a run's) is left alone entirely: checked before each of the three steps.
`dont-delete` and no policy delete nothing. The clock is injected (`now`): tests move it, nothing sleeps.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from datetime import UTC, datetime

from terrace.adapters.blobs import BlobStore
from terrace.domain import clock
from terrace.domain import state_versions as st
from terrace.domain.configuration_versions import UPLOADED
from terrace.domain.errors import NotFound
from terrace.domain.plan_json import stored_plan_keys
from terrace.domain.retention import DELETE_OLDER
from terrace.domain.workspace import Workspace
from terrace.services.access.organizations import OrganizationService
from terrace.services.runs.configuration_versions import ConfigurationVersionService
from terrace.services.runs.logs import ETX, STX, archive_key
from terrace.services.runs.store import RunStore
from terrace.services.state.store import StateStore
from terrace.services.workflows.store import SweepClaimStore
from terrace.services.workspaces.retention import RetentionPolicyService
from terrace.services.workspaces.workspaces import WorkspaceService

log = logging.getLogger("terrace.retention")

SWEEP_INTERVAL_S = 3600


class RetentionSweep:
    def __init__(
        self,
        claims: SweepClaimStore,
        blobs: BlobStore,
        organizations: OrganizationService,
        workspaces: WorkspaceService,
        policies: RetentionPolicyService,
        configuration_versions: ConfigurationVersionService,
        runs: RunStore,
        state_versions: StateStore,
        now: Callable[[], float] = clock.epoch,
    ) -> None:
        self._claims, self._blobs, self._orgs, self._workspaces = claims, blobs, organizations, workspaces
        self._policies, self._cvs, self._runs, self._now = policies, configuration_versions, runs, now
        self._state_store = state_versions

    def sweep_if_due(self, interval_s: float = SWEEP_INTERVAL_S) -> dict[str, int] | None:
        """Sweep when the last sweep (of any process) is `interval_s` old; None when not due or taken."""
        if not self._claims.claim(self._now(), interval_s):
            return None
        return self.sweep_once()

    def sweep_once(self) -> dict[str, int]:
        summary = {"workspaces": 0, "skipped_locked": 0, "state_versions": 0, "configuration_versions": 0, "runs": 0}
        for org in self._orgs.all():
            for ws in self._workspaces.all_in(org.key):
                try:
                    self._sweep_workspace(ws, summary)
                except Exception:  # one workspace's failure must not stop the others
                    log.exception("retention sweep failed for workspace %s", ws.id)
        return summary

    def _sweep_workspace(self, ws: Workspace, summary: dict[str, int]) -> None:
        policy = self._policies.effective(ws)
        if policy is None or policy.kind != DELETE_OLDER or not policy.days:
            return
        summary["workspaces"] += 1
        cutoff = datetime.fromtimestamp(self._now() - policy.days * 86400, UTC)
        cutoff_iso = clock.iso(cutoff)
        note = f"This log was deleted by the data retention policy (older than {policy.days} days).\n".encode()
        steps = (
            ("state_versions", lambda current: self._state_versions(current, cutoff_iso)),
            ("configuration_versions", lambda current: self._configuration_versions(current, cutoff_iso)),
            ("runs", lambda current: self._run_files(current, cutoff_iso, note)),
        )
        for name, step in steps:
            current = self._unlocked(ws.id)
            if current is None:
                summary["skipped_locked"] += 1
                return
            summary[name] += step(current)

    def _unlocked(self, workspace_id: str) -> Workspace | None:
        try:
            ws = self._workspaces.load(workspace_id)
        except NotFound:
            return None
        return None if ws.locked else ws

    def _state_versions(self, ws: Workspace, cutoff_iso: str) -> int:
        deleted = 0
        for sv in self._state_store.list_for_workspace(ws.id):
            if sv.created_at >= cutoff_iso:
                break  # ordered by creation
            if sv.id == ws.current_state_version_id or sv.status != st.FINALIZED or sv.backing_data == st.DATA_DELETED:
                continue
            updated = dataclasses.replace(sv, backing_data=st.DATA_DELETED, version=sv.version + 1)
            if not self._state_store.save_if_unchanged(updated, sv.version):
                continue  # changed meanwhile: the next sweep decides again
            for key in (sv.blob_key, sv.json_blob_key, sv.sanitized_blob_key):
                self._blobs.delete(key)
            deleted += 1
        return deleted

    def _configuration_versions(self, ws: Workspace, cutoff_iso: str) -> int:
        latest = self._cvs.latest_uploaded(ws)
        deleted = 0
        for cv in self._cvs.created_before(ws.id, cutoff_iso):
            if cv.status != UPLOADED or cv.backing_data == st.DATA_DELETED or (latest and cv.id == latest.id):
                continue
            if self._cvs.expire_backing_data(cv):
                deleted += 1
        return deleted

    def _run_files(self, ws: Workspace, cutoff_iso: str, note: bytes) -> int:
        swept = 0
        for run in self._runs.list_for_workspace(ws.id):
            if run.created_at >= cutoff_iso or not run.final:
                continue
            touched = False
            for key in stored_plan_keys(run.plan.artifact_key, run.plan.json_key):
                if key.startswith(f"plans/{run.id}/") and self._blobs.head(key) is not None:
                    self._blobs.delete(key)
                    touched = True
            for phase in (run.plan, run.apply):
                touched |= self._replace_log(archive_key(phase.id), note)
            swept += int(touched)
        return swept

    def _replace_log(self, key: str, note: bytes) -> bool:
        info = self._blobs.head(key)
        framed = STX + note + ETX
        if info is None or info.size <= len(framed):
            return False
        self._blobs.put(key, framed, content_type="text/plain")
        return True
