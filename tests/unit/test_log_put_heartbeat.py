"""A log PUT stands for a heartbeat: the API records one with it when due and answers the run's cancel flags
(`Terrace-Heartbeat` on its 204), and the runner sends no heartbeat of its own while its output flows. One API request
instead of two while a phase streams (`services/runs/job_liveness.py`, `runner/process.py: Heartbeat`)."""

from __future__ import annotations

import pytest
from run_helpers import make_run_env
from terrace.domain import clock
from terrace.domain.jobs import BEAT_HEADER, HeartbeatResponse, beat_of
from terrace.runner.process import CancelControl, Heartbeat


def test_a_log_put_records_a_heartbeat_when_one_is_due_and_answers_the_cancel_flags(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    env = make_run_env(job_heartbeat_timeout_s=45, queued_deadline_s=-1, queued_resend_s=-1)
    run = env.create_run(env.upload_config())
    spec = env.claim("r1")
    claimed_at = clock.epoch()
    logs = f"/jobs/{spec['job_id']}/logs"

    def at(seconds: float) -> None:
        monkeypatch.setattr(clock, "epoch", lambda: claimed_at + seconds)

    at(1)
    first = env.runner("PUT", f"{logs}?offset=0", content=b"Initializing...\n")
    assert first.status_code == 204 and first.headers[BEAT_HEADER] == "run"  # beaten lately (the claim): no write
    at(40)
    later = env.runner("PUT", f"{logs}?offset=16", content=b"Refreshing state...\n")
    assert later.status_code == 204 and later.headers[BEAT_HEADER] == "run"
    at(80)  # 80 s after the claim, 40 s after that PUT: within the 45 s a runner may be silent
    assert env.container.reaper.reap_once().get("retried", 0) == 0
    assert env.run(run["id"])["attributes"]["status"] == "planning"
    assert env.api("POST", f"/runs/{run['id']}/actions/cancel", {}).status_code == 202
    canceled = env.runner("PUT", f"{logs}?offset=36", content=b"Still planning...\n")
    assert canceled.status_code == 204 and beat_of(canceled.headers[BEAT_HEADER]) == HeartbeatResponse(cancel=True)


class FakeWait:
    """The heartbeat thread's wait, run inline on a fake clock: log PUTs answered at `puts` (fake seconds) meanwhile;
    stops once the clock passes `until`."""

    def __init__(self, now: list[float], puts: list[float], until: float) -> None:
        self.now, self.puts, self.until = now, puts, until
        self.heartbeat: Heartbeat | None = None

    def wait(self, seconds: float) -> bool:
        end = self.now[0] + seconds
        for at in [p for p in self.puts if self.now[0] < p <= end]:
            self.now[0] = at
            assert self.heartbeat is not None
            self.heartbeat.beaten(HeartbeatResponse())
        self.now[0] = end
        return end > self.until


def test_the_runner_beats_only_when_no_log_put_stood_for_a_beat_within_the_interval() -> None:
    now = [0.0]
    beats: list[float] = []

    def beat() -> HeartbeatResponse:
        beats.append(now[0])
        return HeartbeatResponse()

    heartbeat = Heartbeat(beat, CancelControl(), 10, clock=lambda: now[0])
    fake = FakeWait(now, puts=[2.0 * n for n in range(1, 16)], until=60)  # output every 2 s until 30 s
    fake.heartbeat = heartbeat
    heartbeat._stop = fake  # type: ignore[assignment]  # the thread's loop, run inline
    heartbeat._run()
    assert beats == [40.0, 50.0, 60.0]  # none while the output flowed; every 10 s after its last PUT


def test_a_log_put_an_older_api_answers_without_the_header_is_no_beat() -> None:
    assert beat_of(None) is None and beat_of("") is None
    assert beat_of("force-cancel") == HeartbeatResponse(cancel=True, force_cancel=True)
    now = [0.0]
    beats: list[float] = []

    def beat() -> HeartbeatResponse:
        beats.append(now[0])
        return HeartbeatResponse()

    heartbeat = Heartbeat(beat, CancelControl(), 10, clock=lambda: now[0])
    fake = FakeWait(now, puts=[], until=25)
    fake.heartbeat = heartbeat
    heartbeat._stop = fake  # type: ignore[assignment]
    heartbeat.beaten(None)
    heartbeat._run()
    assert beats == [10.0, 20.0]
