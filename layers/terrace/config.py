"""Settings read once from the environment by the composition root (never at import time elsewhere)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field


class ConfigurationError(Exception):
    """A setting the process cannot run without is missing or wrong: it refuses to start."""


def _env_int(env: dict[str, str], name: str, default: int) -> int:
    raw = env.get(name)
    return int(raw) if raw else default


API_RATE_LIMIT_PER_S = 30  # TFC's limit per token

_TIMINGS = {
    "job_heartbeat_s": 10,
    "job_heartbeat_timeout_s": 45,
    "job_max_attempts": 5,
    "job_retry_base_s": 2,
    "queued_deadline_s": 3600,
    "queued_resend_s": 120,
    "phase_deadline_s": 4 * 3600,
    "confirm_deadline_s": 14 * 24 * 3600,
    "force_cancel_cooloff_s": 10,
    "run_token_ttl_s": 6 * 3600,
    "runner_token_ttl_s": 24 * 3600,
    "log_url_ttl_s": 5 * 60,
    "state_snapshot_interval_s": 300,
}


@dataclass(frozen=True)
class Settings:
    """Where Terrace's resources are and how it behaves. The same fields exist locally and on AWS."""

    table_name: str
    blob_bucket: str
    queue_urls: dict[str, str] = field(default_factory=dict)  # logical queue name -> URL
    public_url: str = "https://localhost:8443"  # how clients reach the API (used in absolute links)
    region: str = "us-east-1"
    aws_endpoint_url: str | None = None  # moto server in local mode
    data_dir: str | None = None  # the embedded server's data (SQLite, blobs, key): bootstrap.build_embedded
    kms_key_id: str | None = None
    url_signing_secret: str = ""  # HMAC key for log-read and other signed URLs
    presign_ttl_s: int = 900
    max_request_bytes: int = 6 * 1024 * 1024  # the Lambda payload limit
    max_inline_state_bytes: int = 4 * 1024 * 1024  # raw bytes; base64 of this fits the payload limit
    max_config_bytes: int = 512 * 1024 * 1024
    bootstrap_token_secret_arn: str | None = None
    url_signing_secret_arn: str | None = None  # on AWS: resolved into url_signing_secret by the composition root
    scaler_function: str | None = None  # on AWS: the api invokes this Lambda after enqueueing a job
    ecs_cluster: str | None = None
    runner_task_definition: str | None = None
    runner_container_name: str = "runner"
    runner_subnets: tuple[str, ...] = ()
    runner_security_groups: tuple[str, ...] = ()
    runner_assign_public_ip: bool = True
    runner_log_group: str | None = None  # CloudWatch log group of the Fargate runners (AWS only): UI links
    max_runners: int = 4
    max_runners_per_organization: int = 0  # 0: only max_runners limits an organization
    warm_runners_per_organization: int = 0  # runners kept alive per organization with no job (they never idle out)
    # people sign in to the UI through this OpenID Connect issuer when set (services/access/oidc.py)
    oidc_issuer: str | None = None
    oidc_client_id: str = ""
    oidc_client_secret: str = ""
    oidc_client_secret_arn: str | None = None  # on AWS: resolved into oidc_client_secret by the composition root
    oidc_groups_claim: str = "groups"
    # job state machine timings (seconds); tests and local mode shorten them
    job_heartbeat_s: int = 10
    job_heartbeat_timeout_s: int = 45
    job_max_attempts: int = 5
    job_retry_base_s: int = 2
    queued_deadline_s: int = 3600
    queued_resend_s: int = 120
    phase_deadline_s: int = 4 * 3600
    confirm_deadline_s: int = 14 * 24 * 3600
    force_cancel_cooloff_s: int = 10
    run_token_ttl_s: int = 6 * 3600
    runner_token_ttl_s: int = 24 * 3600  # a runner's token; it takes no new job in its last phase_deadline_s
    log_url_ttl_s: int = 5 * 60  # a log-read URL works this long, or until its phase ended this long ago
    # X-Terraform-Snapshot-Interval on state-version responses: clients with a `cloud` block save intermediate
    # state snapshots at most this often during an apply; 0 disables them
    state_snapshot_interval_s: int = 300
    # the versions runners hold, `terraform=1.11.4,opentofu=1.9.4,...` (TERRACE_TOOL_CATALOG): on AWS the
    # versions the runner image bakes, locally the versions found in the local catalog
    tool_catalog: str = ""
    default_tool: str = "terraform"  # TERRACE_DEFAULT_TOOL: the tool runs use when both hold a satisfying version

    def tool_versions(self) -> dict[str, list[str]]:
        """tool_catalog as {tool: [versions]} (unknown tools and malformed entries are skipped)."""
        catalog: dict[str, list[str]] = {"terraform": [], "opentofu": []}
        for entry in self.tool_catalog.split(","):
            tool, _, version = entry.strip().partition("=")
            if tool in catalog and version.strip():
                catalog[tool].append(version.strip())
        return catalog

    # requests per second per API token under /api/v2 (`X-RateLimit-Limit`); 0 = no limit. The processes that
    # serve clients (`from_env` on AWS, the local stack) use TFC's 30; Settings built in tests have none
    api_rate_limit_per_s: int = 0

    def require_url_signing_secret(self) -> None:
        """The API signs log-read URLs and web sessions: it never starts with an empty key."""
        if not self.url_signing_secret.strip():
            raise ConfigurationError(
                "no URL-signing secret: set TERRACE_URL_SIGNING_SECRET, or TERRACE_URL_SIGNING_SECRET_ARN on AWS"
            )

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> Settings:
        env = dict(os.environ if env is None else env)
        queue_urls = {
            key.removeprefix("TERRACE_QUEUE_URL_").lower().replace("_", "-"): value
            for key, value in env.items()
            if key.startswith("TERRACE_QUEUE_URL_")
        }
        data_dir = env.get("TERRACE_DATA_DIR") or None
        return cls(
            table_name=env.get("TERRACE_TABLE") or ("embedded" if data_dir else env["TERRACE_TABLE"]),
            blob_bucket=env.get("TERRACE_BLOB_BUCKET") or ("embedded" if data_dir else env["TERRACE_BLOB_BUCKET"]),
            data_dir=data_dir,
            queue_urls=queue_urls,
            public_url=env.get("TERRACE_PUBLIC_URL", "https://localhost:8443").rstrip("/"),
            region=env.get("AWS_REGION", env.get("AWS_DEFAULT_REGION", "us-east-1")),
            aws_endpoint_url=env.get("TERRACE_AWS_ENDPOINT_URL") or None,
            kms_key_id=env.get("TERRACE_KMS_KEY_ID") or None,
            url_signing_secret=env.get("TERRACE_URL_SIGNING_SECRET", ""),
            presign_ttl_s=_env_int(env, "TERRACE_PRESIGN_TTL_S", 900),
            max_request_bytes=_env_int(env, "TERRACE_MAX_REQUEST_BYTES", 6 * 1024 * 1024),
            max_inline_state_bytes=_env_int(env, "TERRACE_MAX_INLINE_STATE_BYTES", 4 * 1024 * 1024),
            max_config_bytes=_env_int(env, "TERRACE_MAX_CONFIG_BYTES", 512 * 1024 * 1024),
            bootstrap_token_secret_arn=env.get("TERRACE_BOOTSTRAP_SECRET_ARN") or None,
            url_signing_secret_arn=env.get("TERRACE_URL_SIGNING_SECRET_ARN") or None,
            scaler_function=env.get("TERRACE_SCALER_FUNCTION") or None,
            ecs_cluster=env.get("TERRACE_ECS_CLUSTER") or None,
            runner_task_definition=env.get("TERRACE_RUNNER_TASK_DEFINITION") or None,
            runner_container_name=env.get("TERRACE_RUNNER_CONTAINER", "runner"),
            runner_subnets=tuple(s for s in env.get("TERRACE_RUNNER_SUBNETS", "").split(",") if s),
            runner_security_groups=tuple(s for s in env.get("TERRACE_RUNNER_SECURITY_GROUPS", "").split(",") if s),
            runner_assign_public_ip=env.get("TERRACE_RUNNER_PUBLIC_IP", "true").lower() == "true",
            runner_log_group=env.get("TERRACE_RUNNER_LOG_GROUP") or None,
            max_runners=_env_int(env, "TERRACE_MAX_RUNNERS", 4),
            max_runners_per_organization=_env_int(env, "TERRACE_MAX_RUNNERS_PER_ORGANIZATION", 0),
            warm_runners_per_organization=_env_int(env, "TERRACE_WARM_RUNNERS_PER_ORGANIZATION", 0),
            oidc_issuer=(env.get("TERRACE_OIDC_ISSUER") or "").rstrip("/") or None,
            oidc_client_id=env.get("TERRACE_OIDC_CLIENT_ID", ""),
            oidc_client_secret=env.get("TERRACE_OIDC_CLIENT_SECRET", ""),
            oidc_client_secret_arn=env.get("TERRACE_OIDC_CLIENT_SECRET_ARN") or None,
            oidc_groups_claim=env.get("TERRACE_OIDC_GROUPS_CLAIM", "groups"),
            tool_catalog=env.get("TERRACE_TOOL_CATALOG", ""),
            default_tool=env.get("TERRACE_DEFAULT_TOOL") or "terraform",
            api_rate_limit_per_s=_env_int(env, "TERRACE_API_RATE_LIMIT_PER_S", API_RATE_LIMIT_PER_S),
            **{name: _env_int(env, f"TERRACE_{name.upper()}", default) for name, default in _TIMINGS.items()},
        )
