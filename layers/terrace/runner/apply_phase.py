"""An apply job's phase: in the plan's held folder when it still holds the stored plan (no download, no init),
else in a fresh one; the API told that the apply starts before anything applies, and the summary line's counts
reported."""

from __future__ import annotations

import re
from collections import deque
from pathlib import Path

import httpx

from terrace.domain.jobs import FinishRequest
from terrace.runner import commands
from terrace.runner.client import ApiError, RunnerApi, Transfers
from terrace.runner.job_folder import JobFolder
from terrace.runner.job_setup import Job, JobFailed, JobSteps, check_cancel
from terrace.runner.plan_cache import HeldPlan
from terrace.runner.plan_files import check_recorded, same_file
from terrace.runner.plan_phase import MAX_PLAN_BYTES
from terrace.runner.rundir import parallelism

APPLY_SUMMARY = re.compile(rb"Resources: (\d+) added, (\d+) changed, (\d+) destroyed")


class ApplyPhase:
    def __init__(self, steps: JobSteps, api: RunnerApi, transfers: Transfers, work_dir: Path) -> None:
        self.steps, self.api, self.transfers, self.work_dir = steps, api, transfers, work_dir

    def run(self, job: Job, held: HeldPlan | None) -> FinishRequest:
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
        if not spec.hyok:  # a sealed plan was checked before it was opened (`_download_plan`)
            check_recorded(spec, stored)
        tail: deque[bytes] = deque(maxlen=64)

        def sink(chunk: bytes) -> None:
            tail.append(chunk)
            job.log.write(chunk)

        self._announce_apply(job)
        code = self.steps.run(job, commands.apply_args(stored, threads), sink=sink)
        if spec.hyok:  # the new state, sealed with the customer's key, whether the apply succeeded or not
            self.steps.hyok_state(job).push(job)
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
        if job.spec.hyok:
            check_recorded(job.spec, stored)
            self.steps.hyok_state(job).open_plan(job, stored)
        return stored

    def _fresh(self, job: Job, held: HeldPlan) -> None:
        """Leaves the held folder for a new one (the job's own, removed when it ends)."""
        held.remove()
        job.folder = JobFolder.new(self.work_dir, f"{job.spec.job_id}-", job.identity)

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
