"""A plan job's phase: the plan in the job sandbox, then `show -json` while the plan file uploads, the JSON plan's
secrets hidden and uploaded, and the counts, actions and checksums the finish report claims."""

from __future__ import annotations

import json
import logging
import os
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

from terrace.domain import terraform_actions
from terrace.domain.jobs import FinishRequest, JobSpec, UploadUrls
from terrace.domain.plan_json import hide_secrets
from terrace.domain.sanitized_state import sanitize_plan
from terrace.domain.terraform_actions import DeclaredAction, PlannedInvocations
from terrace.runner import commands, installed_modules, module_notices, workload_identity
from terrace.runner.client import ApiError, RunnerApi, Transfers
from terrace.runner.job_folder import JobFolder
from terrace.runner.job_setup import Job, JobFailed, JobSteps
from terrace.runner.plan_files import md5_of
from terrace.runner.rundir import parallelism

log = logging.getLogger("terrace.runner.execution")
MAX_PLAN_BYTES = 1024 * 1024 * 1024
PLAN_FILE = "plan.tfplan"
PLAN_JSON_FILE = "plan.json"


class PlanPhase:
    def __init__(self, steps: JobSteps, api: RunnerApi, transfers: Transfers) -> None:
        self.steps, self.api, self.transfers = steps, api, transfers

    def run(self, job: Job) -> FinishRequest:
        spec, folder = job.spec, job.folder
        self.steps.banner(job, f"planning run {spec.run_id}")
        assert job.binary is not None
        commands.check_invoke(spec.operation, job.binary)  # before anything runs
        threads = parallelism(spec.variables)
        self.steps.prepare(job)
        module_notices.warn(job, self.api.module_versions)
        installed = installed_modules.read(job)  # after init, before the configuration's code runs
        written = folder.path / "out" / PLAN_FILE  # the job's; the runner reads it once, through a checked descriptor
        plan_code, _ = self.steps.run_retried(
            job, commands.plan_args(spec.operation, written, threads), what="plan", succeeded=(0, 2)
        )
        if plan_code not in (0, 2):
            raise JobFailed(f"plan failed (exit code {plan_code})")
        counts = commands.ChangeCounts()
        plan_md5 = plan_json_md5 = None
        actions: tuple[list[DeclaredAction] | None, list[PlannedInvocations]] = (None, [])
        invokes = False  # the plan invokes actions: it has something to apply even with no resource change
        if os.path.lexists(written):
            plan_file = folder.copy_from_job(written, PLAN_FILE, MAX_PLAN_BYTES, job_reads=True)
            # Hold Your Own Key: the stored plan is sealed with the customer's key (it holds the prior state)
            uploaded = self.steps.hyok_state(job).seal_plan(job, plan_file) if spec.hyok else plan_file
            with ThreadPoolExecutor(max_workers=1, thread_name_prefix="plan-upload") as uploads:
                plan_url = self._upload_urls(spec).plan_upload_url if spec.plan_upload_url else None
                plan_upload = self._upload(uploads, plan_url, uploaded, "plan file")  # while show runs
                code, _ = self.steps.run_retried(  # the child writes to the descriptor only
                    job,
                    commands.show_json_args(plan_file),
                    what="reading the plan",
                    stdout=lambda: folder.create(PLAN_JSON_FILE),
                )
                if code != 0:
                    raise JobFailed(f"reading the plan as JSON failed (exit code {code})")
                plan_json_file = folder.path / PLAN_JSON_FILE
                if plan_json_file.stat().st_size > MAX_PLAN_BYTES:
                    raise JobFailed(f"the JSON plan is larger than {MAX_PLAN_BYTES} bytes")
                try:
                    plan_json = json.loads(plan_json_file.read_bytes())
                    counts = commands.count_changes(plan_json)
                    invokes = isinstance(plan_json, dict) and bool(plan_json.get("action_invocations"))
                    actions = terraform_actions.declared(plan_json), terraform_actions.planned(plan_json)
                except ValueError as exc:
                    raise JobFailed("the JSON plan could not be parsed") from exc
                _hide_secrets(spec, plan_json, folder)
                if spec.hyok and isinstance(plan_json, dict):
                    folder.write(PLAN_JSON_FILE, json.dumps(sanitize_plan(plan_json)).encode())
                json_url = self._upload_urls(spec).plan_json_upload_url if spec.plan_json_upload_url else None
                if json_url:
                    self.transfers.upload(json_url, plan_json_file, "JSON plan")
                if plan_upload is not None:
                    plan_upload.result()  # the finish report claims both are stored
            plan_md5 = md5_of(uploaded) if spec.plan_upload_url else None
            plan_json_md5 = md5_of(plan_json_file) if spec.plan_json_upload_url else None
        return FinishRequest(
            runner_id=self.api.runner_id,
            status="finished",
            plan_md5=plan_md5,
            plan_json_md5=plan_json_md5,
            has_changes=plan_code == 2 or invokes,
            resource_additions=counts.additions,
            resource_changes=counts.changes,
            resource_destructions=counts.destructions,
            resource_imports=counts.imports,
            declared_actions=actions[0],
            action_invocations=actions[1],
            installed_modules=installed,
        )

    def _upload_urls(self, spec: JobSpec) -> UploadUrls:
        """Upload URLs signed now, asked for just before an upload: the spec's were signed at the claim, on AWS
        with a session that may end before a long plan does. An API without the endpoint: the spec's."""
        try:
            return self.api.upload_urls(spec.job_id)
        except ApiError as exc:
            if exc.status not in (404, 405):  # a job that is gone: its finish is refused anyway
                raise
            log.warning("fresh upload URLs unavailable (%s): using the job's", exc)
            return UploadUrls(plan_upload_url=spec.plan_upload_url, plan_json_upload_url=spec.plan_json_upload_url)

    def _upload(self, pool: ThreadPoolExecutor, url: str | None, path: Path, what: str) -> Future[None] | None:
        return pool.submit(self.transfers.upload, url, path, what) if url else None


def _hide_secrets(spec: JobSpec, plan_json: object, folder: JobFolder) -> None:
    """The uploaded plan JSON holds no sensitive variable value (nor the run token)."""
    sensitive = [v for v in spec.variables if v.sensitive]
    if not isinstance(plan_json, dict):
        return
    hidden = hide_secrets(
        plan_json,
        [spec.run_token, *(v.value for v in sensitive), *workload_identity.tokens(spec.workload_credentials)],
        {v.key for v in sensitive if v.category == "terraform"},
    )
    folder.write(PLAN_JSON_FILE, json.dumps(hidden).encode())
