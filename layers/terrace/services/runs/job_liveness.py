"""A running job's signs of life: its heartbeats, and the log PUTs that stand for them.

Mixed into `JobService` (its `_load`, `_seen`, store, logs and settings). A heartbeat records that the runner still
works the job and answers the run's cancel flags. A log PUT proves the same: when the phase's last beat is older
than half the heartbeat interval, the PUT records one as a heartbeat would (one conditional write, retried), and
either way it answers the cancel flags, so a runner whose output flows sends no heartbeat of its own
(`runner/process.py: Heartbeat.beaten`): one API request instead of two while a phase streams.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from terrace.domain import agent_pools, clock
from terrace.domain import runs as rs
from terrace.domain.errors import Conflict
from terrace.domain.jobs import HeartbeatRequest, HeartbeatResponse
from terrace.domain.principal import Principal
from terrace.domain.runs import Run
from terrace.services.runs.job_handoff import runner_ref
from terrace.services.runs.store import retrying

if TYPE_CHECKING:
    from terrace.config import Settings
    from terrace.services.runs.logs import LogService
    from terrace.services.runs.store import RunStore


class JobLiveness:
    _store: RunStore
    _logs: LogService
    _settings: Settings

    def _load(self, principal: Principal, job_id: str) -> tuple[Run, str]:
        raise NotImplementedError

    def _seen(self, principal: Principal, runner_id: str, status: str) -> None:
        raise NotImplementedError

    def heartbeat(self, principal: Principal, job_id: str, request: HeartbeatRequest) -> HeartbeatResponse:
        def step() -> HeartbeatResponse:
            run, name = self._load(principal, job_id)
            state = run.phase(name)
            if run.final or state.final:
                return HeartbeatResponse(
                    cancel=True, force_cancel=run.status == rs.FORCE_CANCELED or run.force_cancel_requested
                )
            if state.status != rs.P_RUNNING or state.runner_id != runner_ref(principal, request.runner_id):
                raise Conflict(f"job {job_id} is not running on {request.runner_id}")
            expected = run.version
            state.heartbeat_at = clock.epoch()
            self._store.save([(run, expected)], None, {run.id: run.status})
            return _flags(run)

        answer = retrying(step)
        self._seen(principal, request.runner_id, agent_pools.BUSY)
        return answer

    def append_log(self, principal: Principal, job_id: str, offset: int, data: bytes) -> HeartbeatResponse:
        """Appends a chunk of the running job's log; answers as a heartbeat would (recording one when due)."""
        run, name = self._load(principal, job_id)
        state = run.phase(name)
        if state.status != rs.P_RUNNING or not (state.runner_id or "").endswith(f"@{principal.token_id}"):
            raise Conflict(f"job {job_id} is not running on this runner; its log is closed to it")
        self._logs.append(state.id, state.attempt, offset, data)
        if clock.epoch() - (state.heartbeat_at or 0.0) < self._settings.job_heartbeat_s / 2:
            return _flags(run)  # beaten lately: no write
        runner_id = (state.runner_id or "").rpartition("@")[0]
        return self.heartbeat(principal, job_id, HeartbeatRequest(runner_id=runner_id))


def _flags(run: Run) -> HeartbeatResponse:
    return HeartbeatResponse(cancel=run.cancel_requested_at is not None, force_cancel=run.force_cancel_requested)
