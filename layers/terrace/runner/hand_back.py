"""A runner that hands a plan in flight back on SIGTERM instead of finishing it: `terrace agent` (its pool's
other agents take it) and a runner on Fargate Spot (`TERRACE_RUNNER_LANES=speculative`), whose SIGTERM is an
interruption's two-minute warning. A plan changes nothing, so terraform is killed at once and the API queues the
plan again (`/api/runner/jobs/:id/release`: `JobRetries`, within `job_max_attempts`, after which the run ends
errored with the reason); an apply in flight is finished, never handed back. Had the hand-back failed, the plan's
heartbeats stop and the reaper retries it all the same."""

from __future__ import annotations

import logging
import threading

from terrace.domain.jobs import FinishRequest, FinishResponse, JobSpec
from terrace.runner.main import Runner, StopIdle

log = logging.getLogger("terrace.runner")


class HandBackRunner(Runner):
    """The runner's loop; on SIGTERM a plan in flight is interrupted and handed back instead of reported."""

    handing_back = False
    running: JobSpec | None = None

    def request_stop(self) -> None:
        self.stopping = True
        job, control = self.running, self.executor.current
        if job is not None and job.phase == "plan" and control is not None:
            self.handing_back = True
            # a plan changes nothing: terraform is killed at once (off the signal handler, which may have interrupted
            # a holder of the control's lock) and the plan goes back to the queue
            threading.Thread(target=control.force_cancel, name="hand-back").start()
        if self.idle:
            raise StopIdle

    def handle(self, spec: JobSpec) -> None:
        self.running = spec
        try:
            super().handle(spec)
        finally:
            self.running = None

    def _report(self, spec: JobSpec, report: FinishRequest) -> FinishResponse | None:
        if self.handing_back and spec.phase == "plan" and report.status == "canceled":
            try:
                self.api.release(spec.job_id)
                log.info("handed job %s back: another runner takes it", spec.job_id)
            except Exception as exc:  # its heartbeats stop: the reaper retries it all the same
                log.error("handing job %s back failed: %s", spec.job_id, exc)
            return None
        return super()._report(spec, report)
