"""The runner's settings, read once from the environment at start-up.

`RunnerConfig` is a pydantic-settings model, in the style of the server's `terrace.config.Settings`: each field
names the environment variable it is read from (`validation_alias`). `RunnerConfig(...)` takes only what it is given
(tests) and reads no environment; `RunnerConfig.from_env()` reads the runner's environment and refuses a bad value
with a one-line `ConfigError` naming the variable.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, ValidationError, field_validator
from pydantic_settings import BaseSettings, NoDecode, PydanticBaseSettingsSource, SettingsConfigDict

from terrace.settings_source import environment_values


class ConfigError(ValueError):
    """The runner's environment is incomplete or malformed."""


_HINTS = {  # what a missing required variable's line adds
    "TERRACE_API_URL": "e.g. https://localhost:8443",
}
ENROLLMENT_OR_TOKEN = "TERRACE_RUNNER_ENROLLMENT_CODE or TERRACE_RUNNER_TOKEN is required (the scaler gives a code)"


def _binaries(raw: str) -> dict[str, str]:
    binaries: dict[str, str] = {}
    for item in (part.strip() for part in raw.split(",")):
        if not item:
            continue
        version, sep, path = item.partition("=")
        if not sep or not version.strip() or not path.strip():
            raise ValueError(f"expected version=path, got {item!r}")
        binaries[version.strip().removeprefix("v")] = path.strip()
    return binaries


def parse_binaries(raw: str) -> dict[str, str]:
    """`1.0.3=/opt/tf/1.0.3/terraform,1.6.2=/opt/tofu` -> {version: path}."""
    try:
        return _binaries(raw)
    except ValueError as exc:
        raise ConfigError(f"TERRACE_TF_BINARIES: {exc}") from None


def _clamped(low: float, high: float = float("inf")) -> AfterValidator:
    """A number brought into [low, high] rather than refused (as the runner always did)."""
    return AfterValidator(lambda value: min(max(value, low), high))


_NotNegative = Annotated[float, _clamped(0.0)]


class RunnerConfig(BaseSettings):
    model_config = SettingsConfigDict(
        case_sensitive=True,
        env_ignore_empty=True,  # an empty variable is an unset one: the default applies
        extra="forbid",  # RunnerConfig(typo=...) is an error, as it was for the dataclass
        validate_by_name=True,  # RunnerConfig(api_url=...) in tests
        validate_by_alias=True,  # RunnerConfig.from_env: the variables
    )

    api_url: str = Field(validation_alias="TERRACE_API_URL")
    # one organization's runner token: exchanged at start for `enrollment_code` (what the scaler gives), or given
    runner_token: str = Field(default="", validation_alias="TERRACE_RUNNER_TOKEN", repr=False)
    enrollment_code: str = Field(default="", validation_alias="TERRACE_RUNNER_ENROLLMENT_CODE", repr=False)
    organization: str = Field(default="", validation_alias="TERRACE_RUNNER_ORGANIZATION")  # informational
    tf_binary: str = Field(default="terraform", validation_alias="TERRACE_TF_BINARY")
    # `version=path,...`
    tf_binaries: Annotated[dict[str, str], NoDecode] = Field(
        default_factory=dict, validation_alias="TERRACE_TF_BINARIES"
    )
    # the catalog: <tools>/terraform/<version>/terraform, <tools>/tofu/<version>/tofu
    tools_dir: Path | None = Field(default=None, validation_alias="TERRACE_TOOLS_DIR")
    # a version a job asks for that the runner does not hold is fetched from the release mirror, checked against
    # the signed SHA256SUMS and cached in tools_dir (else <work_dir>/tools): `runner/tool_fetch.py`
    tool_fetch: bool = Field(default=True, validation_alias="TERRACE_TOOL_FETCH")
    tool_mirror_terraform: str = Field(default="", validation_alias="TERRACE_TOOL_MIRROR_TERRAFORM")
    tool_mirror_opentofu: str = Field(default="", validation_alias="TERRACE_TOOL_MIRROR_OPENTOFU")
    # armored OpenPGP keys (files or folders of *.asc, comma-separated) trusted to sign SHA256SUMS instead of the
    # vendor keys shipped in runner/keys/
    tool_trusted_keys: str = Field(default="", validation_alias="TERRACE_TOOL_TRUSTED_KEYS")
    # which tool a run uses when both hold a satisfying version (from_env: opentofu when TERRACE_TF_BINARY is tofu)
    default_tool: str = Field(default="terraform", validation_alias="TERRACE_DEFAULT_TOOL")
    operator_cli_config: Path | None = Field(default=None, validation_alias="TERRACE_OPERATOR_CLI_CONFIG")
    idle_exit_s: _NotNegative = Field(default=0.0, validation_alias="TERRACE_RUNNER_IDLE_EXIT_S")
    # once the runner has served a job and holds no plan's folder for its apply (its run's work is done: nothing is
    # expected), it exits after this many idle seconds instead (0: at its first empty answer); unset or empty:
    # `idle_exit_s` throughout (warm runners, whose point is to wait)
    done_exit_s: float | None = Field(default=None, validation_alias="TERRACE_RUNNER_DONE_EXIT_S")
    # echo each job output line to stdout as JSON; off on Fargate (infra/runner.py): the runners' one CloudWatch
    # log group would hold every organization's output outside Terrace's access control and retention
    echo_output: bool = Field(default=True, validation_alias="TERRACE_RUNNER_ECHO_OUTPUT")
    # how long one /jobs/next long-poll waits on the API for a job (at most 20 s)
    wait_s: Annotated[float, _clamped(0.0, 20.0)] = Field(default=5.0, validation_alias="TERRACE_RUNNER_WAIT_S")
    # pause after an empty answer (on Lambda: short polls are cheaper than waits; at most 60 s)
    poll_interval_s: Annotated[float, _clamped(0.0, 60.0)] = Field(
        default=0.0, validation_alias="TERRACE_RUNNER_POLL_INTERVAL_S"
    )
    # short polls within `brisk_window_s` (at most 300 s) of the runner's start or its last job pause at most
    # `brisk_poll_s`: what follows a job (the confirmed apply of its plan, the workspace's next run) usually comes
    # within seconds
    brisk_window_s: Annotated[float, _clamped(0.0, 300.0)] = Field(
        default=10.0, validation_alias="TERRACE_RUNNER_BRISK_WINDOW_S"
    )
    brisk_poll_s: float = 0.5  # no variable
    # epoch seconds: take no new job after this (0 = never)
    retire_at: _NotNegative = Field(default=0.0, validation_alias="TERRACE_RUNNER_RETIRE_AT")
    # comma-separated lanes whose jobs this runner takes (empty: every lane); "speculative" on Fargate Spot, where
    # SIGTERM (an interruption) hands the plan in flight back to be retried (runner/hand_back.py)
    lanes: str = Field(default="", validation_alias="TERRACE_RUNNER_LANES")
    # set by `terrace agent` only: the tfc-agent version its runs see as `TFC_AGENT_VERSION` (runner/agent.py)
    agent_version: str = ""
    runner_id: str = Field(default="", validation_alias="TERRACE_RUNNER_ID")  # from_env: <hostname>-<pid>
    ssl_cert_file: str | None = Field(default=None, validation_alias="SSL_CERT_FILE")
    work_dir: Path = Field(default=Path("/tmp/terrace-runner"), validation_alias="TERRACE_WORK_DIR")
    # job uids kept from link-local addresses (runner/sandbox.py: guard_link_local): on ECS only, always, never
    block_link_local: Literal["auto", "true", "false"] = Field(
        default="auto", validation_alias="TERRACE_RUNNER_BLOCK_LINK_LOCAL"
    )
    max_config_bytes: int = Field(default=512 * 1024 * 1024, validation_alias="TERRACE_RUNNER_MAX_CONFIG_BYTES")
    max_config_entries: int = 100_000  # no variable
    # the configuration once unpacked
    max_config_expanded_bytes: int = Field(
        default=512 * 1024 * 1024, validation_alias="TERRACE_RUNNER_MAX_CONFIG_EXPANDED_BYTES"
    )

    @field_validator("done_exit_s", mode="before")
    @classmethod
    def _unset_when_empty(cls, value: Any) -> Any:
        if value is None or (isinstance(value, str) and not value.strip()):
            return None
        return max(float(value), 0.0)

    @field_validator("api_url")
    @classmethod
    def _no_trailing_slash(cls, value: str) -> str:
        return value.rstrip("/")

    @field_validator("tf_binaries", mode="before")
    @classmethod
    def _version_equals_path(cls, value: Any) -> Any:
        return _binaries(value) if isinstance(value, str) else value

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """`RunnerConfig(...)` is what it is given and the defaults: only `from_env` reads the environment."""
        return (init_settings,)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> RunnerConfig:
        """The settings the variables of `env` (the process environment by default) describe."""
        env = dict(os.environ if env is None else env)
        named = {str(f.validation_alias) for f in cls.model_fields.values() if isinstance(f.validation_alias, str)}
        values = {key: value for key, value in environment_values(cls, env).items() if key in named}
        binary = values.get("TERRACE_TF_BINARY") or "terraform"
        values.setdefault("TERRACE_DEFAULT_TOOL", "opentofu" if "tofu" in Path(binary).name else "terraform")
        values.setdefault("TERRACE_RUNNER_ID", f"{socket.gethostname()}-{os.getpid()}")
        credential = values.get("TERRACE_RUNNER_TOKEN") or values.get("TERRACE_RUNNER_ENROLLMENT_CODE")
        try:
            config = cls(**values)
        except ValidationError as exc:
            raise ConfigError(_one_line(exc) + ("" if credential else f"; {ENROLLMENT_OR_TOKEN}")) from None
        if not credential:
            raise ConfigError("invalid runner settings: " + ENROLLMENT_OR_TOKEN)
        return config


def _one_line(exc: ValidationError) -> str:
    """`TERRACE_RUNNER_WAIT_S: Input should be a valid number (got 'soon'); ...`: each bad variable once."""
    problems = []
    for error in exc.errors():
        name = ".".join(str(part) for part in error["loc"]) or "settings"
        if error["type"] == "missing":
            hint = _HINTS.get(name)
            problems.append(f"{name} is required" + (f" ({hint})" if hint else ""))
        else:
            mine = error["type"] == "value_error"  # ours (TERRACE_TF_BINARIES) names what it got
            got = "" if mine else f" (got {error['input']!r})"
            problems.append(f"{name}: {error['msg'].removeprefix('Value error, ')}{got}")
    return "invalid runner settings: " + "; ".join(problems)
