"""Upload URLs for a running plan, handed to its runner just before each upload.

The URLs of a job's spec are signed when the job is claimed; on AWS they are signed with the API Lambda role's
temporary session and die with it, whatever their TTL: a plan that runs longer than the session has left would
find its upload URL expired. The runner asks for its plan file's and JSON plan's PUT URLs right before it
uploads them (`POST /api/runner/jobs/:id/upload-urls`), signed now and good for `presign_ttl_s`."""

from __future__ import annotations

from terrace.adapters.blobs import BlobStore
from terrace.config import Settings
from terrace.domain import runs as rs
from terrace.domain.errors import Conflict, NotFound
from terrace.domain.jobs import UploadUrls
from terrace.domain.organizations import OrgView
from terrace.domain.principal import Principal
from terrace.domain.runs import Run, run_id_of
from terrace.services.access.authz import Authorizer
from terrace.services.runs.job_handoff import runner_ref
from terrace.services.runs.store import RunStore, WriteOp, retrying


class JobUploads:
    def __init__(self, store: RunStore, blobs: BlobStore, authz: Authorizer, settings: Settings) -> None:
        self._store, self._blobs, self._authz, self._settings = store, blobs, authz, settings

    def running_job(self, principal: Principal, job_id: str, runner_id: str) -> Run:
        """The run of the job `job_id` running on the caller's runner `runner_id` (a job it may not work is NotFound:
        `Authorizer.require_job`; a job that is not running on this runner, a Conflict)."""
        run = self._run_of(principal, job_id)
        phase = run.plan if job_id.startswith("plan-") else run.apply
        if run.final or phase.id != job_id or phase.status != rs.P_RUNNING:
            raise Conflict(f"job {job_id} is not running")
        if phase.runner_id != runner_ref(principal, runner_id):
            raise Conflict(f"job {job_id} is not running on {runner_id}")
        return run

    def _run_of(self, principal: Principal, job_id: str) -> Run:
        if not job_id.startswith(("plan-", "apply-")):
            raise NotFound(f"job {job_id} not found")
        try:
            run = self._store.load(run_id_of(job_id))
        except NotFound as exc:
            raise NotFound(f"job {job_id} not found") from exc
        # as every runner route: another organization's job, another pool's, or a runner asking for an agent's is
        # the NotFound of a job that does not exist
        self._authz.require_job(principal, OrgView(run.organization, ()), run.agent_pool_id, f"job {job_id}")
        return run

    def record_sealed_plan(
        self, principal: Principal, job_id: str, runner_id: str, data_key_id: str, writes: list[WriteOp]
    ) -> None:
        """A Hold Your Own Key plan job's sealed plan: its data key's id on the plan, with `writes` (the key's own
        records) in the same transaction."""
        if not job_id.startswith("plan-"):
            self._run_of(principal, job_id)
            raise Conflict(f"job {job_id} is an apply: it seals no plan")

        def step() -> None:
            run = self.running_job(principal, job_id, runner_id)
            expected = run.version
            run.plan.hyok_data_key_id = data_key_id
            self._store.save([(run, expected)], extra=writes)

        retrying(step)

    def upload_urls(self, principal: Principal, job_id: str, runner_id: str) -> UploadUrls:
        """Fresh single-use PUT URLs of the plan job `job_id`, for the runner working it (`running_job`)."""
        if job_id.startswith("apply-"):
            self._run_of(principal, job_id)
            raise Conflict(f"job {job_id} is an apply: it uploads no plan")
        plan = self.running_job(principal, job_id, runner_id).plan
        ttl = self._settings.presign_ttl_s
        return UploadUrls(
            plan_upload_url=self._blobs.presign_put(plan.artifact_key, ttl, exclusive=True)
            if plan.artifact_key
            else None,
            plan_json_upload_url=self._blobs.presign_put(plan.json_key, ttl, exclusive=True) if plan.json_key else None,
        )
