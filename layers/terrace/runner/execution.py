"""Executes one claimed job (a plan or apply phase) and returns what to report to the API.

A finished plan that may be applied leaves its folder in the runner's `PlanCache` (root-owned, 0700); the
same run's apply on this runner works there (no download, no init) when the stored plan file is byte-identical
to the one in the folder; otherwise, and on any other runner, it starts from a fresh folder.
"""

from __future__ import annotations

import io
import json
import logging
import os
import re
import time
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import TextIO

import httpx

from terrace.domain import runs as rs
from terrace.domain import terraform_actions
from terrace.domain.jobs import FinishRequest, FinishResponse, JobSpec, UploadUrls
from terrace.domain.plan_json import hide_secrets
from terrace.domain.terraform_actions import DeclaredAction, PlannedInvocations
from terrace.runner import commands, module_notices, sandbox, workload_identity
from terrace.runner.client import ApiError, RunnerApi, Transfers
from terrace.runner.config import RunnerConfig
from terrace.runner.job_folder import JobFolder, UnsafeJobFile
from terrace.runner.job_setup import Job, JobCanceled, JobFailed, JobSteps, check_cancel
from terrace.runner.logstream import LogStream
from terrace.runner.module_tests import run_tests
from terrace.runner.plan_cache import HeldPlan, PlanCache
from terrace.runner.plan_files import check_recorded, md5_of, same_file
from terrace.runner.process import CancelControl, Heartbeat
from terrace.runner.query import run_query
from terrace.runner.rundir import BackendOverride, RunSetupError, parallelism, remote_backend_override
from terrace.runner.safe_tar import UnsafeArchive

log = logging.getLogger("terrace.runner.execution")
APPLY_SUMMARY = re.compile(rb"Resources: (\d+) added, (\d+) changed, (\d+) destroyed")
MAX_PLAN_BYTES = 1024 * 1024 * 1024
PLAN_FILE = "plan.tfplan"
PLAN_JSON_FILE = "plan.json"
MAY_STILL_APPLY = rs.APPLY_AHEAD
HELD_CHECK_S = 5.0  # how often an idle runner asks the API which held plan folders may still be applied

__all__ = ["JobCanceled", "JobExecutor", "JobFailed"]


class _Discard(io.StringIO):
    """Where job output goes when the runner does not echo it (`echo_output` off): nowhere."""

    def write(self, s: str) -> int:
        return len(s)


_DISCARD = _Discard()


class JobExecutor:
    def __init__(
        self,
        config: RunnerConfig,
        api: RunnerApi,
        transfers: Transfers,
        backend_override: BackendOverride = remote_backend_override,
        echo_to: TextIO | None = None,
        cache: PlanCache | None = None,
    ) -> None:
        self.config, self.api, self.transfers = config, api, transfers
        self.echo_to = echo_to
        self.cache = cache if cache is not None else PlanCache()
        self.steps = JobSteps(config, api.runner_id, transfers, backend_override)
        self._held_checked = 0.0
        self.current: CancelControl | None = None  # the running job's cancel control

    def execute(self, spec: JobSpec, keep_for_apply: bool = True) -> FinishRequest:
        """Runs the job; a finished plan that may be applied stays held when `keep_for_apply`."""
        started = time.monotonic()
        sandbox.prepare_work_dir(self.config.work_dir)
        if spec.phase == "plan":
            self.cache.drop(spec.run_id)  # a plan retried here starts afresh
        held = self.cache.take(spec.run_id) if spec.phase == "apply" else None
        identity = sandbox.allocate()
        folder = held.folder if held else JobFolder.new(self.config.work_dir, f"{spec.job_id}-", identity)
        secrets = [spec.run_token, *(v.value for v in spec.variables if v.sensitive)]
        secrets += [spec.ssh_private_key] if spec.ssh_private_key else []
        secrets += workload_identity.tokens(spec.workload_credentials)
        control = CancelControl()
        heartbeat = Heartbeat(lambda: self.api.heartbeat(spec.job_id), control, spec.heartbeat_interval_s)
        stream = LogStream(  # masks `secrets` in what it sends and what it prints; a PUT may stand for a beat
            lambda offset, chunk: heartbeat.beaten(self.api.put_logs(spec.job_id, offset, chunk)),
            job_id=spec.job_id,
            redact=secrets,
            echo_to=self.echo_to if self.config.echo_output else _DISCARD,
        )
        job = Job(spec=spec, folder=folder, log=stream, control=control, identity=identity)
        self.current = job.control  # `terrace agent`'s SIGTERM interrupts a plan through it (hand-back)
        report = FinishRequest(runner_id=self.api.runner_id, status="finished")
        try:
            with heartbeat:
                try:
                    if spec.operation.query:  # a query run (`runner/query.py`)
                        report = run_query(self.steps, job, self.api.runner_id)
                    elif spec.operation.test is not None:  # a module's test run (`runner/module_tests.py`)
                        report = run_tests(self.steps, job, self.api.runner_id)
                    else:
                        report = self._plan(job) if spec.phase == "plan" else self._apply(job, held)
                except JobCanceled:
                    stream.line("\nThe run was canceled.")
                    report = FinishRequest(runner_id=self.api.runner_id, status="canceled")
                except (JobFailed, RunSetupError, UnsafeArchive, UnsafeJobFile, ApiError) as exc:
                    stream.line(f"\nError: {exc}")
                    report = self._errored(job, str(exc))
                except Exception as exc:
                    log.exception("job %s failed in the runner", spec.job_id)
                    stream.line(f"\nError: the runner failed: {type(exc).__name__}")
                    report = self._errored(job, f"the runner failed: {type(exc).__name__}")
        finally:
            self.current = None
            stream.close()
            if identity is not None:
                sandbox.kill_uid(identity.uid)  # before the folder goes: nothing of the job writes to it anymore
                sandbox.sweep_temp(identity.uid)
            keep = keep_for_apply and self._may_be_applied(job, report)
            if keep:  # closed to every job uid: the next job may get the same uid and must not read it
                job.folder.hold()
                self.cache.hold(spec.run_id, job.folder, job.cwd, job.folder.path / PLAN_FILE)
            else:
                job.folder.remove()
            if identity is not None:
                identity.release()
        if job.control.requested and report.status != "finished":
            report = report.model_copy(update={"status": "canceled"})
        log.info(
            "job %s %s in %.2f s (%s folder)",
            spec.job_id,
            report.status,
            time.monotonic() - started,
            "the plan's" if job.resumed else "a fresh",
        )
        return report.model_copy(update={"keep_for_apply": keep})

    def settled(self, spec: JobSpec, answer: FinishResponse | None) -> None:
        """After the finish report: a held plan folder stays only while its run may still be applied here."""
        if spec.phase != "plan" or not self.cache.holds(spec.run_id):
            return
        handed = answer is not None and answer.next_job is not None and answer.next_job.run_id == spec.run_id
        if not handed and (answer is None or answer.run_status not in MAY_STILL_APPLY):
            self.cache.drop(spec.run_id)

    def tidy(self, clock: float | None = None) -> None:
        """While idle: drops held folders past their bounds or whose run the API says will not apply here."""
        self.cache.expire()
        now = time.monotonic() if clock is None else clock
        if not len(self.cache) or now - self._held_checked < HELD_CHECK_S:
            return
        self._held_checked = now
        try:
            self.cache.keep_only(self.api.held_runs(self.cache.run_ids()))
        except Exception as exc:  # the age bound still applies
            log.warning("asking which held plan folders may still be applied failed: %s", exc)

    def close(self) -> None:
        """The runner exits: nothing of a job outlives it."""
        self.cache.clear()

    # -- phases ---------------------------------------------------------------------------------

    def _plan(self, job: Job) -> FinishRequest:
        spec, folder = job.spec, job.folder
        self.steps.banner(job, f"planning run {spec.run_id}")
        assert job.binary is not None
        commands.check_invoke(spec.operation, job.binary)  # before anything runs
        threads = parallelism(spec.variables)
        self.steps.prepare(job)
        module_notices.warn(job, self.api.module_versions)
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
            with ThreadPoolExecutor(max_workers=1, thread_name_prefix="plan-upload") as uploads:
                plan_url = self._upload_urls(spec).plan_upload_url if spec.plan_upload_url else None
                plan_upload = self._upload(uploads, plan_url, plan_file, "plan file")  # while show runs
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
                self._hide_secrets(spec, plan_json, folder)
                json_url = self._upload_urls(spec).plan_json_upload_url if spec.plan_json_upload_url else None
                if json_url:
                    self.transfers.upload(json_url, plan_json_file, "JSON plan")
                if plan_upload is not None:
                    plan_upload.result()  # the finish report claims both are stored
            plan_md5 = md5_of(plan_file) if spec.plan_upload_url else None
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

    def _apply(self, job: Job, held: HeldPlan | None) -> FinishRequest:
        spec = job.spec
        if not spec.plan_file_url:
            raise JobFailed("the apply job has no saved plan to apply")
        self.steps.banner(job, f"applying run {spec.run_id}")
        assert job.binary is not None
        commands.check_invoke(spec.operation, job.binary)
        threads = parallelism(spec.variables)
        if held is not None:
            stored = self._download_plan(job)
            if held.folder.intact(held.cwd) and same_file(stored, held.plan_file):
                self.steps.resume(job, held.cwd)
            else:
                job.log.line("The plan's working directory does not hold the stored plan: starting afresh.")
                self._fresh(job, held)
        if not job.resumed:
            self.steps.prepare(job)
            stored = self._download_plan(job)
        check_recorded(spec, stored)
        tail: deque[bytes] = deque(maxlen=64)

        def sink(chunk: bytes) -> None:
            tail.append(chunk)
            job.log.write(chunk)

        self._announce_apply(job)
        code = self.steps.run(job, commands.apply_args(stored, threads), sink=sink)
        if code != 0:
            raise JobFailed(f"apply failed (exit code {code})")
        matches = APPLY_SUMMARY.findall(b"".join(tail))
        added, changed, destroyed = (int(g) for g in matches[-1]) if matches else (0, 0, 0)
        return FinishRequest(
            runner_id=self.api.runner_id,
            status="finished",
            has_changes=bool(added or changed or destroyed),
            resource_additions=added,
            resource_changes=changed,
            resource_destructions=destroyed,
        )

    def _download_plan(self, job: Job) -> Path:
        """The stored plan, into the runner's folder (the job reads it, cannot replace it)."""
        stored = job.folder.write("plan.stored", b"", job_reads=True)
        assert job.spec.plan_file_url
        self.transfers.download(job.spec.plan_file_url, stored, MAX_PLAN_BYTES, "saved plan")
        return stored

    def _fresh(self, job: Job, held: HeldPlan) -> None:
        """Leaves the held folder for a new one (the job's own, removed when it ends)."""
        held.remove()
        job.folder = JobFolder.new(self.config.work_dir, f"{job.spec.job_id}-", job.identity)

    def _may_be_applied(self, job: Job, report: FinishRequest) -> bool:
        spec = job.spec
        return (
            spec.phase == "plan"
            and report.status == "finished"
            and report.has_changes
            and not spec.operation.speculative
            and not job.control.requested
            and (job.folder.path / PLAN_FILE).is_file()
            and self.cache.max_entries > 0
        )

    @staticmethod
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

    def _announce_apply(self, job: Job) -> None:
        """Nothing applies unless the API recorded that it starts: a lost apply is then never run twice."""
        check_cancel(job)
        try:
            answer = self.api.start_apply(job.spec.job_id)
        except ApiError as exc:
            raise JobFailed(f"the API did not let the apply start; nothing was applied ({exc})") from exc
        except httpx.TransportError as exc:
            raise JobFailed(f"the API could not be told that the apply starts; nothing was applied ({exc})") from exc
        job.control.apply(answer)
        check_cancel(job)

    def _errored(self, job: Job, message: str) -> FinishRequest:
        tail = job.log.tail(15)
        detail = f"{message}\n{tail}" if tail else message
        return FinishRequest(runner_id=self.api.runner_id, status="errored", error_message=detail[-4000:])
