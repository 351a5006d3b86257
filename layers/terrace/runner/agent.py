"""`terrace agent`: Terrace's runner, started by a team on a machine of its own, serving one agent pool.

Configured like HashiCorp's tfc-agent (`TFC_AGENT_TOKEN`, `TFC_ADDRESS`, `TFC_AGENT_NAME`, `TFC_AGENT_SINGLE`,
`TFC_AGENT_LOG_LEVEL`; `TFC_AGENT_AUTO_UPDATE` is accepted and ignored) or by the same options on the command line;
the runner's own `TERRACE_*` settings (tools, work folder, CA bundle) apply as for Terrace's runners. It registers
with its pool's token (`POST /api/agent/register`: an agent id, shown with its name, address and status in the
pool), then runs the runner's loop (`runner/main.py`) as that agent: it long-polls for its pool's jobs only, runs
them in the same sandbox with the same tool catalog and masking, and heartbeats (its pings). On SIGTERM it stops
asking; a plan in flight is interrupted and handed back (`/api/runner/jobs/:id/release`, retried elsewhere under the
lost-attempt rules), an apply in flight finishes (apply-once). It then says it exited.
"""

from __future__ import annotations

import ipaddress
import logging
import os
import signal
import socket
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

import httpx

from terrace.runner import sandbox
from terrace.runner.client import RunnerApi, Transfers, with_retries
from terrace.runner.config import ConfigError, RunnerConfig
from terrace.runner.execution import JobExecutor
from terrace.runner.hand_back import HandBackRunner
from terrace.runner.hyok_envelope import KeyWrapping
from terrace.runner.hyok_state import HyokAgent
from terrace.runner.main import StopIdle, _JsonFormatter

log = logging.getLogger("terrace.agent")
# `TFC_AGENT_VERSION` in its runs: the tfc-agent release whose job protocol this agent serves (terraform's `cloud`
# backend refuses import blocks in a run whose agent is older than 1.10)
TFC_AGENT_VERSION = "1.22.0"
LEVELS = {"trace": "DEBUG", "debug": "DEBUG", "info": "INFO", "warn": "WARNING", "error": "ERROR"}


@dataclass(frozen=True)
class AgentOptions:
    token: str
    address: str
    name: str
    single: bool = False
    log_level: str = "info"


INSECURE_LOOPBACK = "TERRACE_AGENT_ALLOW_INSECURE_LOOPBACK"


def check_address(address: str, allow_insecure_loopback: bool) -> None:
    """The agent sends its pool's token to `address`: https only, or plain http to this machine's loopback when
    asked for explicitly (`--allow-insecure-loopback`, or TERRACE_AGENT_ALLOW_INSECURE_LOOPBACK=1: a local test)."""
    parts = urlsplit(address)
    if parts.scheme == "https" and parts.hostname:
        return
    if parts.scheme != "http" or not parts.hostname:
        raise ConfigError(f"TFC_ADDRESS must be an https URL, got {address!r}")
    try:
        loopback = parts.hostname == "localhost" or ipaddress.ip_address(parts.hostname).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        raise ConfigError(f"TFC_ADDRESS {address!r} is plain http: the agent would send its token in clear; use https")
    if not allow_insecure_loopback:
        raise ConfigError(
            f"TFC_ADDRESS {address!r} is plain http: the agent would send its token in clear; use https, or, for "
            f"a server on this machine only, --allow-insecure-loopback ({INSECURE_LOOPBACK}=1)"
        )


def options_from(env: Mapping[str, str], **flags: object) -> AgentOptions:
    """tfc-agent's variables, each overridden by its command-line flag when given."""

    def pick(flag: str, variable: str, default: str = "") -> str:
        value = flags.get(flag)
        return str(value) if value not in (None, "") else env.get(variable, default)

    token = pick("token", "TFC_AGENT_TOKEN")
    address = pick("address", "TFC_ADDRESS", "https://app.terraform.io").rstrip("/")
    if not token:
        raise ConfigError("TFC_AGENT_TOKEN is required: an authentication token of the agent pool")
    allow_insecure = bool(flags.get("allow_insecure_loopback")) or env.get(INSECURE_LOOPBACK, "").lower() in (
        "1", "true", "yes",
    )  # fmt: skip
    check_address(address, allow_insecure)
    single = flags.get("single")
    single_env = env.get("TFC_AGENT_SINGLE", "").lower() in ("1", "true", "yes")
    level = pick("log_level", "TFC_AGENT_LOG_LEVEL", "info").lower()
    if level not in LEVELS:
        raise ConfigError(f"TFC_AGENT_LOG_LEVEL must be one of {', '.join(LEVELS)}, got {level!r}")
    name = pick("name", "TFC_AGENT_NAME", socket.gethostname())
    return AgentOptions(token, address, name, bool(single) or single_env, level)


def runner_config(options: AgentOptions, env: Mapping[str, str]) -> RunnerConfig:
    """The runner's settings for this agent: its address and token; long-polls of 20 s; never idles out."""
    values = {k: v for k, v in env.items() if k.startswith("TERRACE_") or k == "SSL_CERT_FILE"}
    values.update(
        {
            "TERRACE_API_URL": options.address,
            "TERRACE_RUNNER_TOKEN": options.token,
            "TERRACE_RUNNER_WAIT_S": "20",
            "TERRACE_RUNNER_IDLE_EXIT_S": "0",
            "TERRACE_RUNNER_RETIRE_AT": "0",
            "TERRACE_RUNNER_ID": "unregistered",
        }
    )
    values.setdefault("TERRACE_WORK_DIR", "/tmp/terrace-agent")
    return RunnerConfig.from_env(values).model_copy(update={"agent_version": TFC_AGENT_VERSION})


class AgentRegistry:
    """`/api/agent`: register, exit (the agent's pool token)."""

    def __init__(self, address: str, token: str, ssl_cert_file: str | None) -> None:
        self._http = httpx.Client(
            base_url=f"{address}/api/agent",
            verify=ssl_cert_file or True,
            headers={"Authorization": f"Bearer {token}"},
            timeout=httpx.Timeout(30.0, connect=10.0),
        )

    def register(self, name: str) -> dict[str, str]:
        response = with_retries(lambda: self._http.post("/register", json={"name": name}), "register")
        if response.status_code >= 400:
            raise ConfigError(f"the agent could not register: HTTP {response.status_code}: {response.text[:300]}")
        return dict(response.json())

    def exit(self, agent_id: str) -> None:
        try:
            self._http.post(f"/agents/{agent_id}/exit")
        except httpx.HTTPError as exc:
            log.warning("could not tell the API this agent exits: %s", exc)

    def close(self) -> None:
        self._http.close()


class AgentRunner(HandBackRunner):
    """The runner's loop; on SIGTERM a plan in flight is interrupted and handed back (to another agent of the
    pool) instead of reported."""


def serve(options: AgentOptions, env: Mapping[str, str] | None = None, key_wrapper: KeyWrapping | None = None) -> int:
    """Registers, serves jobs until SIGTERM (or one job with `single`), says it exited. 0 when stopped, 2 for bad
    settings or a refused registration, 3 when the API refused the token meanwhile. `key_wrapper`: how this agent
    reaches customers' keys for Hold Your Own Key workspaces (`runner/hyok_state.py`; none: it runs none)."""
    env = dict(os.environ if env is None else env)
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(_JsonFormatter())
    logging.basicConfig(level=LEVELS[options.log_level], handlers=[handler], force=True)
    for noisy in ("httpx", "httpcore", "urllib3"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    try:
        config = runner_config(options, env)
        registry = AgentRegistry(options.address, options.token, config.ssl_cert_file)
        agent = registry.register(options.name)
    except ConfigError as exc:
        log.error("%s", exc)
        return 2
    config = config.model_copy(update={"runner_id": agent["agent_id"]})
    sandbox.guard_link_local(config.block_link_local, env)
    api = RunnerApi(config.api_url, config.runner_token, config.runner_id, config.ssl_cert_file)
    transfers = Transfers(config.ssl_cert_file)
    hyok = HyokAgent(
        config.api_url, config.runner_token, config.runner_id, transfers, key_wrapper, config.ssl_cert_file
    )
    runner = AgentRunner(config, api, JobExecutor(config, api, transfers, hyok=hyok))

    def stop(signum: int, _frame: object) -> None:
        log.info("signal %d: stopping (a plan in flight is handed back, an apply finishes)", signum)
        runner.request_stop()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    log.info("agent %s (%s) serving agent pool %s of %s", agent["agent_id"], agent["name"], agent["pool_id"],
             agent["organization"])  # fmt: skip
    try:
        return runner.loop(once=options.single)
    except StopIdle:
        return 0
    finally:
        runner.executor.close()
        registry.exit(agent["agent_id"])
        registry.close()
