"""The runner's loop: long-poll the API for its organization's next job (claimed) -> execute -> finish."""

from __future__ import annotations

import json
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import Annotated, Any

import httpx
import typer

from terrace.domain.jobs import EnrollResponse, FinishRequest, FinishResponse, JobSpec
from terrace.runner import sandbox
from terrace.runner.client import ApiError, HandOver, RunnerApi, Transfers
from terrace.runner.config import ConfigError, RunnerConfig
from terrace.runner.enrollment import enroll, own_task_arn, task_proof
from terrace.runner.execution import JobExecutor

log = logging.getLogger("terrace.runner")
ERROR_PAUSE_S = 1.0  # after a failed ask, and between empty answers when nothing else paces the loop


class Runner:
    def __init__(
        self,
        config: RunnerConfig,
        api: RunnerApi,
        executor: JobExecutor,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.config, self.api, self.executor, self.clock, self.wall_clock = config, api, executor, clock, wall_clock
        self.sleep = sleep
        self.stopping = False
        self.idle = False  # waiting for a job (no job of ours would be cut short)
        self._reports: list[threading.Thread] = []  # finish calls still in flight
        self.served = 0  # jobs run: one that ran some may be asked to hand its slot over
        # a runner of some lanes without "apply" (Spot, a warm window's) keeps no plan folder for an apply it may
        # not take: the apply goes through its lane to a runner that takes applies
        lanes = [lane for lane in config.lanes.split(",") if lane]
        self.takes_applies = not lanes or "apply" in lanes

    def request_stop(self) -> None:
        """SIGTERM: finish the current job, then exit; an idle runner leaves its long-poll at once."""
        self.stopping = True
        if self.idle:
            raise StopIdle

    def handle(self, spec: JobSpec) -> None:
        """Runs one claimed job and reports how it ended. A plan whose folder this runner holds for its apply reports
        at once and follows the answer: the API may hand over the same run's apply (claimed), which then runs in that
        folder. Every other report goes out on a thread of its own while the runner asks for its next job (the
        server's work to close a phase, archiving its log, queueing what follows, revoking its token, is then off the
        way); `loop` waits for every report before it returns."""
        job: JobSpec | None = spec
        while job is not None:
            log.info("running job %s (%s of run %s, attempt %d)", job.job_id, job.phase, job.run_id, job.attempt)
            retiring = self.stopping or bool(self.config.retire_at and self.wall_clock() >= self.config.retire_at)
            report = self.executor.execute(job, keep_for_apply=self.takes_applies and not retiring)
            if not self.executor.cache.holds(job.run_id):
                self._report_in_background(job, report)
                return
            answer = self._report(job, report)
            self.executor.settled(job, answer)
            job = answer.next_job if answer is not None else None

    def _report_in_background(self, spec: JobSpec, report: FinishRequest) -> None:
        self._reports = [thread for thread in self._reports if thread.is_alive()]
        thread = threading.Thread(target=self._report, args=(spec, report), name=f"report-{spec.job_id}")
        thread.start()
        self._reports.append(thread)

    def _report(self, spec: JobSpec, report: FinishRequest) -> FinishResponse | None:
        try:
            answer = self.api.finish(report, spec.job_id)
        except Exception as exc:  # the API's heartbeat deadline decides what happens next
            log.error("reporting job %s as %s failed: %s", spec.job_id, report.status, exc)
            return None
        log.info("job %s %s", spec.job_id, report.status)
        return answer

    def wait_for_reports(self) -> None:
        for thread in self._reports:
            thread.join()
        self._reports.clear()

    def loop(self, once: bool = False) -> int:
        try:
            return self._loop(once)
        finally:
            self.wait_for_reports()

    def _loop(self, once: bool) -> int:
        """Ask for jobs until stopped, retired or idle for `idle_exit_s`. Idle, the runner sits in the API's
        long-poll (woken server-side when a job of its organization is queued) and uses no CPU; with short polls
        (`wait_s` 0, on AWS) it pauses between empty answers (`_pause_s`)."""
        idle_since = self.clock()
        while not self.stopping:
            if self.config.retire_at and self.wall_clock() >= self.config.retire_at:
                log.info("retiring: this runner's token expires soon; the scaler starts a fresh one")
                return 0
            try:
                self.idle = True
                try:
                    spec = self.api.next(self._wait_s(idle_since), served=self.served)
                finally:
                    self.idle = False
            except HandOver:
                log.info("handing over: other organizations wait for a runner; this one's slot goes to them")
                return 0
            except ApiError as exc:
                if exc.status in (401, 403):
                    log.error("the runner API refused this runner's token: %s", exc)
                    return 3
                log.warning("asking for the next job failed: %s", exc)
                self.sleep(ERROR_PAUSE_S)
                spec = None
            except Exception as exc:
                log.warning("asking for the next job failed: %s", exc)
                self.sleep(ERROR_PAUSE_S)
                spec = None
            if spec is not None:
                self.served += 1
                try:
                    self.handle(spec)
                except Exception:
                    log.exception("job %s failed in the runner", spec.job_id)
                idle_since = self.clock()
                if once:
                    return 0
                continue
            self.executor.tidy()
            idle_for = self.clock() - idle_since
            exit_after = self._exit_after_s()
            if exit_after is not None and idle_for >= exit_after:
                log.info("idle for %.0f s: exiting", exit_after)
                return 0
            if self.config.poll_interval_s or not self.config.wait_s:
                self.sleep(self._pause_s(idle_for))  # never a busy loop of empty answers
        return 0

    def _exit_after_s(self) -> float | None:
        """How long the runner may be idle before it exits (None: never). Once it has served a job and holds no
        plan's folder for its apply, its run's work is done: `done_exit_s` when set (on Fargate 0, an exit at the
        first empty answer: a tail of polls would bill the task for a job that rarely comes, and the dispatcher
        starts a runner for the next one, the warm window's between runs); else `idle_exit_s` (0: never)."""
        done = self.config.done_exit_s
        if done is not None and self.served and not len(self.executor.cache):
            return done
        return self.config.idle_exit_s or None

    def _pause_s(self, idle_for: float) -> float:
        """The pause between two short polls: `poll_interval_s`, briefer within `brisk_window_s` of the start (the
        runner was started for a job) or of a plan whose folder it holds for the apply (a confirmed apply then starts
        within `brisk_poll_s`, not within the whole interval). After a run's last job nothing is expected that soon:
        each poll is an API request, so the runner asks every `poll_interval_s`."""
        pause = self.config.poll_interval_s or ERROR_PAUSE_S
        expecting = self.served == 0 or len(self.executor.cache) > 0
        if expecting and idle_for < self.config.brisk_window_s:
            return min(pause, self.config.brisk_poll_s)
        return pause

    def _wait_s(self, idle_since: float) -> float:
        """The long-poll's wait: `wait_s`, but not past the moment the runner would exit for being idle."""
        if not (self.config.idle_exit_s and self.config.wait_s):
            return self.config.wait_s
        left = self.config.idle_exit_s - (self.clock() - idle_since)
        return max(0.0, min(self.config.wait_s, left))


class StopIdle(BaseException):  # noqa: N818 -- not an error: skips the loop's `except Exception`
    """Raised by the SIGTERM handler while the runner waits for a job: the wait is abandoned."""


class _JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        doc: dict[str, Any] = {"level": record.levelname, "logger": record.name, "message": record.getMessage()}
        if record.exc_info:
            doc["exception"] = self.formatException(record.exc_info)
        return json.dumps(doc)


def build_runner(config: RunnerConfig) -> Runner:
    lanes = tuple(lane for lane in config.lanes.split(",") if lane)
    api = RunnerApi(config.api_url, config.runner_token, config.runner_id, config.ssl_cert_file, lanes=lanes)
    transfers = Transfers(config.ssl_cert_file)
    if lanes and "apply" not in lanes:  # plans only, on Fargate Spot: an interruption hands the plan in flight back
        from terrace.runner.hand_back import HandBackRunner

        return HandBackRunner(config, api, JobExecutor(config, api, transfers))
    return Runner(config, api, JobExecutor(config, api, transfers))


app = typer.Typer(
    help="Terrace job runner",
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},  # as argparse had
)


@app.command()
def _runner(
    once: Annotated[bool, typer.Option("--once", help="process at most one job, then exit")] = False,
) -> None:
    raise typer.Exit(serve(once=once))


def main(argv: list[str] | None = None) -> int:
    """`python -m terrace.runner [--once]`: 0 when the runner stopped (idle, retired, SIGTERM), 2 for a bad command
    line or environment, 3 when the API refused the runner's token."""
    try:
        app(args=argv, prog_name="python -m terrace.runner")
    except SystemExit as exc:  # typer (click) ends with one, carrying the exit code
        return exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1
    return 0


def _enroll(config: RunnerConfig) -> EnrollResponse:
    """A local runner's code for its token; on ECS, this task's signed proof of its identity (it has no code)."""
    task_arn = own_task_arn()
    if task_arn is None:
        return enroll(config.api_url, config.enrollment_code, None, config.ssl_cert_file)
    return enroll(config.api_url, None, task_arn, config.ssl_cert_file, identity=task_proof(config.api_url))


def serve(once: bool = False) -> int:
    """The runner process: JSON logs on stdout, settings from the environment, jobs until stopped."""
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(_JsonFormatter())
    logging.basicConfig(level=logging.INFO, handlers=[handler], force=True)
    for noisy in ("botocore", "boto3", "urllib3", "httpx", "httpcore"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    try:
        config = RunnerConfig.from_env()
    except ConfigError as exc:
        log.error("%s", exc)
        return 2
    if not config.runner_token:
        try:
            enrolled = _enroll(config)
        except ApiError as exc:
            log.error("the runner API refused this runner's enrollment: %s", exc)
            return 3
        except httpx.HTTPError as exc:
            log.error("could not enroll (the API or the task metadata endpoint is unreachable): %s", exc)
            return 1
        except (RuntimeError, KeyError, ValueError) as exc:  # no task role credentials
            log.error("could not sign this task's identity proof: %s", exc)
            return 1
        config = config.model_copy(update={"runner_token": enrolled.token, "enrollment_code": ""})
        log.info("enrolled as runner %s of %s", enrolled.runner_id, enrolled.organization)
    sandbox.guard_link_local(config.block_link_local, os.environ)
    runner = build_runner(config)

    def stop(signum: int, _frame: object) -> None:
        log.info("signal %d: finishing the current job (if any), then exiting", signum)
        runner.request_stop()

    signal.signal(signal.SIGTERM, stop)
    log.info("runner %s serving organization %s", config.runner_id, config.organization or "(of its token)")
    try:
        return runner.loop(once=once)
    except StopIdle:
        return 0
    finally:
        runner.executor.close()  # held plan folders do not outlive the runner
