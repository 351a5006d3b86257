"""The runner's loop: poll the lanes -> claim -> execute -> finish -> delete the message."""

from __future__ import annotations

import argparse
import json
import logging
import signal
import sys
import time
from collections.abc import Callable
from typing import Any

from terrace.runner.client import ApiError, RunnerApi, Transfers
from terrace.runner.config import ConfigError, RunnerConfig
from terrace.runner.execution import JobExecutor
from terrace.runner.lanes import Lanes, ReceivedJob

log = logging.getLogger("terrace.runner")


class Runner:
    def __init__(
        self,
        config: RunnerConfig,
        lanes: Lanes,
        api: RunnerApi,
        executor: JobExecutor,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.config, self.lanes, self.api, self.executor, self.clock = config, lanes, api, executor, clock
        self.stopping = False

    def handle(self, received: ReceivedJob) -> bool:
        """Claims and runs one job; returns whether it ran. The message is deleted in every final case."""
        message = received.message
        try:
            spec = self.api.claim(message.job_id, message.attempt)
        except ApiError as exc:
            if exc.status in (401, 403):
                raise  # a misconfigured runner must not burn the job's receive count
            log.error("claiming job %s failed; its message stays for another runner: %s", message.job_id, exc)
            return False
        if spec is None:
            log.info("job %s is no longer claimable; dropping its message", message.job_id)
            self.lanes.delete(received)
            return False
        log.info(
            "running job %s (%s of run %s, attempt %d, lane %s)",
            spec.job_id,
            spec.phase,
            spec.run_id,
            spec.attempt,
            received.lane,
        )
        report = self.executor.execute(spec, lambda seconds: self.lanes.extend(received, seconds))
        try:
            self.api.finish(report, spec.job_id)
        except Exception as exc:  # leave the message: the API's deadline decides what happens next
            log.error("reporting job %s as %s failed: %s", spec.job_id, report.status, exc)
            return True
        log.info("job %s %s", spec.job_id, report.status)
        self.lanes.delete(received)
        return True

    def loop(self, once: bool = False) -> int:
        idle_since = self.clock()
        while not self.stopping:
            try:
                received = self.lanes.receive()
            except Exception as exc:
                log.warning("polling the lanes failed: %s", exc)
                time.sleep(1.0)
                received = None
            if received is not None:
                try:
                    ran = self.handle(received)
                except ApiError as exc:
                    if exc.status in (401, 403):
                        log.error("the runner API refused this runner's secret: %s", exc)
                        return 3
                    log.exception("job %s failed in the runner", received.message.job_id)
                    ran = True
                except Exception:
                    log.exception("job %s failed in the runner", received.message.job_id)
                    ran = True
                idle_since = self.clock()
                if once and ran:
                    return 0
                continue
            if self.config.idle_exit_s and self.clock() - idle_since >= self.config.idle_exit_s:
                log.info("idle for %.0f s: exiting", self.config.idle_exit_s)
                return 0
        return 0


class _JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        doc: dict[str, Any] = {"level": record.levelname, "logger": record.name, "message": record.getMessage()}
        if record.exc_info:
            doc["exception"] = self.formatException(record.exc_info)
        return json.dumps(doc)


def build_runner(config: RunnerConfig) -> Runner:
    from terrace.adapters.runner_aws import sqs_client

    api = RunnerApi(config.api_url, config.secret, config.runner_id, config.ssl_cert_file)
    transfers = Transfers(config.ssl_cert_file)
    lanes = Lanes(
        sqs_client(config.region, config.aws_endpoint_url), config.queue_urls, poll_interval_s=config.poll_interval_s
    )
    return Runner(config, lanes, api, JobExecutor(config, api, transfers))


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
    log.info("runner %s polling %s", config.runner_id, ", ".join(config.queue_urls))
    return runner.loop(once=args.once)
