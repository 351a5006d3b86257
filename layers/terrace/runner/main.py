"""The runner's loop: long-poll the API for its organization's next job (claimed) -> execute -> finish."""

from __future__ import annotations

import argparse
import json
import logging
import signal
import sys
import time
from collections.abc import Callable
from typing import Any

from terrace.domain.jobs import JobSpec
from terrace.runner.client import ApiError, RunnerApi, Transfers
from terrace.runner.config import ConfigError, RunnerConfig
from terrace.runner.execution import JobExecutor

log = logging.getLogger("terrace.runner")


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

    def handle(self, spec: JobSpec) -> None:
        """Runs one claimed job and reports how it ended; then the same run's apply if the API hands it over."""
        job: JobSpec | None = spec
        while job is not None:
            log.info("running job %s (%s of run %s, attempt %d)", job.job_id, job.phase, job.run_id, job.attempt)
            retiring = self.stopping or bool(self.config.retire_at and self.wall_clock() >= self.config.retire_at)
            report = self.executor.execute(job, keep_for_apply=not retiring)
            try:
                answer = self.api.finish(report, job.job_id)
            except Exception as exc:  # the API's heartbeat deadline decides what happens next
                log.error("reporting job %s as %s failed: %s", job.job_id, report.status, exc)
                self.executor.settled(job, None)
                return
            self.executor.settled(job, answer)
            log.info("job %s %s", job.job_id, report.status)
            job = answer.next_job if answer is not None else None

    def loop(self, once: bool = False) -> int:
        idle_since = self.clock()
        while not self.stopping:
            if self.config.retire_at and self.wall_clock() >= self.config.retire_at:
                log.info("retiring: this runner's token expires soon; the scaler starts a fresh one")
                return 0
            try:
                spec = self.api.next(self.config.wait_s)
            except ApiError as exc:
                if exc.status in (401, 403):
                    log.error("the runner API refused this runner's token: %s", exc)
                    return 3
                log.warning("asking for the next job failed: %s", exc)
                time.sleep(1.0)
                spec = None
            except Exception as exc:
                log.warning("asking for the next job failed: %s", exc)
                time.sleep(1.0)
                spec = None
            if spec is not None:
                self.executor.cache.drop(
                    spec.run_id
                )  # only an apply handed over by the plan's finish reuses its folder
                try:
                    self.handle(spec)
                except Exception:
                    log.exception("job %s failed in the runner", spec.job_id)
                idle_since = self.clock()
                if once:
                    return 0
                continue
            self.executor.tidy()
            if self.config.idle_exit_s and self.clock() - idle_since >= self.config.idle_exit_s:
                log.info("idle for %.0f s: exiting", self.config.idle_exit_s)
                return 0
            if self.config.poll_interval_s:
                self.sleep(self.config.poll_interval_s)
        return 0


class _JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        doc: dict[str, Any] = {"level": record.levelname, "logger": record.name, "message": record.getMessage()}
        if record.exc_info:
            doc["exception"] = self.formatException(record.exc_info)
        return json.dumps(doc)


def build_runner(config: RunnerConfig) -> Runner:
    api = RunnerApi(config.api_url, config.runner_token, config.runner_id, config.ssl_cert_file)
    transfers = Transfers(config.ssl_cert_file)
    return Runner(config, api, JobExecutor(config, api, transfers))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m terrace.runner", description="Terrace job runner")
    parser.add_argument("--once", action="store_true", help="process at most one job, then exit")
    args = parser.parse_args(argv)
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
    runner = build_runner(config)

    def stop(signum: int, _frame: object) -> None:
        log.info("signal %d: finishing the current job, then exiting", signum)
        runner.stopping = True

    signal.signal(signal.SIGTERM, stop)
    log.info("runner %s serving organization %s", config.runner_id, config.organization or "(of its token)")
    try:
        return runner.loop(once=args.once)
    finally:
        runner.executor.close()  # held plan folders do not outlive the runner
