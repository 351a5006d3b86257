"""The runner's settings, read once from the environment at start-up."""

from __future__ import annotations

import os
import socket
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

LANE_ENV = {
    "apply": "TERRACE_QUEUE_URL_JOBS_APPLY",
    "plan": "TERRACE_QUEUE_URL_JOBS_PLAN",
    "speculative": "TERRACE_QUEUE_URL_JOBS_SPECULATIVE",
}


class ConfigError(ValueError):
    """The runner's environment is incomplete or malformed."""


def parse_binaries(raw: str) -> dict[str, str]:
    """`1.0.3=/opt/tf/1.0.3/terraform,1.6.2=/opt/tofu` -> {version: path}."""
    binaries: dict[str, str] = {}
    for item in (part.strip() for part in raw.split(",")):
        if not item:
            continue
        version, sep, path = item.partition("=")
        if not sep or not version.strip() or not path.strip():
            raise ConfigError(f"TERRACE_TF_BINARIES: expected version=path, got {item!r}")
        binaries[version.strip().removeprefix("v")] = path.strip()
    return binaries


@dataclass
class RunnerConfig:
    api_url: str
    runner_secret: str = ""
    runner_secret_arn: str | None = None
    queue_urls: dict[str, str] = field(default_factory=dict)  # lane -> URL, in priority order
    aws_endpoint_url: str | None = None
    region: str = "us-east-1"
    tf_binary: str = "terraform"
    tf_binaries: dict[str, str] = field(default_factory=dict)
    operator_cli_config: Path | None = None
    idle_exit_s: float = 0.0
    poll_interval_s: float = 0.25  # pause between sweeps of empty lanes; 0 = long-poll the apply lane instead
    runner_id: str = ""
    ssl_cert_file: str | None = None
    work_dir: Path = Path("/tmp/terrace-runner")
    max_config_bytes: int = 512 * 1024 * 1024
    max_config_entries: int = 100_000
    max_config_expanded_bytes: int = 512 * 1024 * 1024  # the configuration once unpacked
    _secret_loader: Callable[[str], str] | None = field(default=None, repr=False)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> RunnerConfig:
        env = dict(os.environ if env is None else env)
        api_url = env.get("TERRACE_API_URL", "").rstrip("/")
        if not api_url:
            raise ConfigError("TERRACE_API_URL is required (e.g. https://localhost:8443)")
        secret, secret_arn = env.get("TERRACE_RUNNER_SECRET", ""), env.get("TERRACE_RUNNER_SECRET_ARN") or None
        if not secret and not secret_arn:
            raise ConfigError("TERRACE_RUNNER_SECRET or TERRACE_RUNNER_SECRET_ARN is required")
        queue_urls = {lane: env[name] for lane, name in LANE_ENV.items() if env.get(name)}
        if not queue_urls:
            raise ConfigError(f"at least one lane queue URL is required ({', '.join(LANE_ENV.values())})")
        operator_cfg = env.get("TERRACE_OPERATOR_CLI_CONFIG") or None
        try:
            idle = float(env.get("TERRACE_RUNNER_IDLE_EXIT_S") or 0)
            poll = float(env.get("TERRACE_RUNNER_POLL_INTERVAL_S") or 0.25)
            max_bytes = int(env.get("TERRACE_RUNNER_MAX_CONFIG_BYTES") or 512 * 1024 * 1024)
            max_expanded = int(env.get("TERRACE_RUNNER_MAX_CONFIG_EXPANDED_BYTES") or 512 * 1024 * 1024)
        except ValueError as exc:
            raise ConfigError(f"malformed number in the runner environment: {exc}") from exc
        return cls(
            api_url=api_url,
            runner_secret=secret,
            runner_secret_arn=secret_arn,
            queue_urls=queue_urls,
            aws_endpoint_url=env.get("TERRACE_AWS_ENDPOINT_URL") or None,
            region=env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or "us-east-1",
            tf_binary=env.get("TERRACE_TF_BINARY") or "terraform",
            tf_binaries=parse_binaries(env.get("TERRACE_TF_BINARIES", "")),
            operator_cli_config=Path(operator_cfg) if operator_cfg else None,
            idle_exit_s=max(idle, 0.0),
            poll_interval_s=max(poll, 0.0),
            runner_id=env.get("TERRACE_RUNNER_ID") or f"{socket.gethostname()}-{os.getpid()}",
            ssl_cert_file=env.get("SSL_CERT_FILE") or None,
            work_dir=Path(env.get("TERRACE_WORK_DIR") or "/tmp/terrace-runner"),
            max_config_bytes=max_bytes,
            max_config_expanded_bytes=max_expanded,
        )

    def secret(self) -> str:
        """The runner secret; resolved from Secrets Manager on first use when only its ARN is given."""
        if not self.runner_secret and self.runner_secret_arn:
            if self._secret_loader is None:
                from terrace.adapters.secrets import fetch_secret  # the same value the API compares with

                self._secret_loader = lambda arn: fetch_secret(arn, self.region, self.aws_endpoint_url)
            self.runner_secret = self._secret_loader(self.runner_secret_arn)
        return self.runner_secret
