"""The runner's settings, read once from the environment at start-up."""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path


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
    runner_token: str = field(default="", repr=False)  # minted by the scaler for this runner: one organization
    organization: str = ""  # informational: the token decides
    tf_binary: str = "terraform"
    tf_binaries: dict[str, str] = field(default_factory=dict)
    tools_dir: Path | None = None  # the catalog: <tools>/terraform/<version>/terraform, <tools>/tofu/<version>/tofu
    default_tool: str = "terraform"  # which tool a run uses when both hold a satisfying version
    operator_cli_config: Path | None = None
    idle_exit_s: float = 0.0
    wait_s: float = 5.0  # how long one /jobs/next long-poll waits on the API for a job
    poll_interval_s: float = 0.0  # pause after an empty answer (on Lambda: short polls are cheaper than waits)
    # short polls within `brisk_window_s` of the runner's start or its last job pause at most `brisk_poll_s`: what
    # follows a job (the confirmed apply of its plan, the workspace's next run) usually comes within seconds
    brisk_window_s: float = 10.0
    brisk_poll_s: float = 0.5
    retire_at: float = 0.0  # epoch seconds: take no new job after this (0 = never)
    runner_id: str = ""
    ssl_cert_file: str | None = None
    work_dir: Path = Path("/tmp/terrace-runner")
    max_config_bytes: int = 512 * 1024 * 1024
    max_config_entries: int = 100_000
    max_config_expanded_bytes: int = 512 * 1024 * 1024  # the configuration once unpacked

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> RunnerConfig:
        env = dict(os.environ if env is None else env)
        api_url = env.get("TERRACE_API_URL", "").rstrip("/")
        if not api_url:
            raise ConfigError("TERRACE_API_URL is required (e.g. https://localhost:8443)")
        token = env.get("TERRACE_RUNNER_TOKEN", "")
        if not token:
            raise ConfigError("TERRACE_RUNNER_TOKEN is required (the scaler mints one per runner)")
        operator_cfg = env.get("TERRACE_OPERATOR_CLI_CONFIG") or None
        try:
            idle = float(env.get("TERRACE_RUNNER_IDLE_EXIT_S") or 0)
            wait = float(env.get("TERRACE_RUNNER_WAIT_S") or 5)
            pause = float(env.get("TERRACE_RUNNER_POLL_INTERVAL_S") or 0)
            brisk = float(env.get("TERRACE_RUNNER_BRISK_WINDOW_S") or 10)
            retire_at = float(env.get("TERRACE_RUNNER_RETIRE_AT") or 0)
            max_bytes = int(env.get("TERRACE_RUNNER_MAX_CONFIG_BYTES") or 512 * 1024 * 1024)
            max_expanded = int(env.get("TERRACE_RUNNER_MAX_CONFIG_EXPANDED_BYTES") or 512 * 1024 * 1024)
        except ValueError as exc:
            raise ConfigError(f"malformed number in the runner environment: {exc}") from exc
        return cls(
            api_url=api_url,
            runner_token=token,
            organization=env.get("TERRACE_RUNNER_ORGANIZATION", ""),
            tf_binary=env.get("TERRACE_TF_BINARY") or "terraform",
            tf_binaries=parse_binaries(env.get("TERRACE_TF_BINARIES", "")),
            tools_dir=Path(env["TERRACE_TOOLS_DIR"]) if env.get("TERRACE_TOOLS_DIR") else None,
            default_tool=env.get("TERRACE_DEFAULT_TOOL")
            or ("opentofu" if "tofu" in Path(env.get("TERRACE_TF_BINARY") or "terraform").name else "terraform"),
            operator_cli_config=Path(operator_cfg) if operator_cfg else None,
            idle_exit_s=max(idle, 0.0),
            wait_s=min(max(wait, 0.0), 20.0),
            poll_interval_s=min(max(pause, 0.0), 60.0),
            brisk_window_s=min(max(brisk, 0.0), 300.0),
            retire_at=max(retire_at, 0.0),
            runner_id=env.get("TERRACE_RUNNER_ID") or f"{socket.gethostname()}-{os.getpid()}",
            ssl_cert_file=env.get("SSL_CERT_FILE") or None,
            work_dir=Path(env.get("TERRACE_WORK_DIR") or "/tmp/terrace-runner"),
            max_config_bytes=max_bytes,
            max_config_expanded_bytes=max_expanded,
        )
