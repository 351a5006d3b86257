"""Executes one claimed job (a plan or apply phase) and returns what to report to the API: the job's folder,
sandbox identity, heartbeat and masked log around the phase (`runner/plan_phase.py`, `runner/apply_phase.py`, a
query's `runner/query.py`, a module test's `runner/module_tests.py`), and what the job leaves behind.

A finished plan that may be applied leaves its folder in the runner's `PlanCache` (root-owned, 0700); the
same run's apply on this runner works there (no download, no init) when the stored plan file is byte-identical
to the one in the folder; otherwise, and on any other runner, it starts from a fresh folder.
"""

from __future__ import annotations

import io
import logging
import time
from typing import TYPE_CHECKING, TextIO

from terrace.domain import runs as rs
from terrace.domain.jobs import FinishRequest, FinishResponse, JobSpec
from terrace.runner import sandbox, workload_identity
from terrace.runner.apply_phase import ApplyPhase
from terrace.runner.client import ApiError, RunnerApi, Transfers
from terrace.runner.config import RunnerConfig
from terrace.runner.job_folder import JobFolder, UnsafeJobFile
from terrace.runner.job_setup import Job, JobCanceled, JobFailed, JobSteps
from terrace.runner.logstream import LogStream
from terrace.runner.module_tests import run_tests
from terrace.runner.plan_cache import PlanCache
from terrace.runner.plan_phase import PLAN_FILE, PlanPhase
from terrace.runner.process import CancelControl, Heartbeat
from terrace.runner.query import run_query
from terrace.runner.rundir import BackendOverride, RunSetupError, remote_backend_override
from terrace.runner.safe_tar import UnsafeArchive

if TYPE_CHECKING:
    from terrace.runner.hyok_state import HyokAgent

log = logging.getLogger("terrace.runner.execution")
MAY_STILL_APPLY = rs.APPLY_AHEAD
HELD_CHECK_S = 5.0  # how often an idle runner asks the API which held plan folders may still be applied

__all__ = ["JobCanceled", "JobExecutor", "JobFailed"]


class _Discard(io.StringIO):
    """Where job output goes when the runner does not echo it (`echo_output` off): nowhere."""

    def write(self, s: str) -> int:
        return len(s)


_DISCARD = _Discard()


def _hyok_aware(backend_override: BackendOverride) -> BackendOverride:
    """A Hold Your Own Key job keeps its state in a local backend the agent fills and empties, encrypted."""

    def override(spec: JobSpec) -> str:
        if spec.hyok:
            from terrace.runner.hyok_state import hyok_backend

            return hyok_backend(spec)
        return backend_override(spec)

    return override


class JobExecutor:
    def __init__(
        self,
        config: RunnerConfig,
        api: RunnerApi,
        transfers: Transfers,
        backend_override: BackendOverride = remote_backend_override,
        echo_to: TextIO | None = None,
        cache: PlanCache | None = None,
        hyok: HyokAgent | None = None,
    ) -> None:
        self.config, self.api, self.transfers = config, api, transfers
        self.echo_to = echo_to
        self.cache = cache if cache is not None else PlanCache()
        self.hyok = hyok
        self.steps = JobSteps(config, api.runner_id, transfers, _hyok_aware(backend_override), hyok)
        self.plan = PlanPhase(self.steps, api, transfers)
        self.apply = ApplyPhase(self.steps, api, transfers, config.work_dir)
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
                        report = self.plan.run(job) if spec.phase == "plan" else self.apply.run(job, held)
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
        if self.hyok is not None:
            self.hyok.close()

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

    def _errored(self, job: Job, message: str) -> FinishRequest:
        tail = job.log.tail(15)
        detail = f"{message}\n{tail}" if tail else message
        return FinishRequest(runner_id=self.api.runner_id, status="errored", error_message=detail[-4000:])
