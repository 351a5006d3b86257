"""Settings read once from the environment by the composition root (never at import time elsewhere).

`Settings` is a pydantic model: each field names the environment variable it is read from (`validation_alias`).
`Settings(...)` takes only what it is given (tests, the local stack); `Settings.from_env()` reads the TERRACE_*
environment and refuses a bad value with a one-line `ConfigurationError`.

A plain `BaseModel` with a small environment reader (`_environment_values`), not pydantic-settings: importing
pydantic-settings costs the API Lambda ~50 ms of every cold start (a sixth of importing FastAPI, Mangum, boto3 and
pydantic), and of it `Settings` used only the environment source. The reader keeps its rules: the exact, case
sensitive variable names, the first of a field's alias choices that is set, an empty variable as an unset one, the
raw string of every value (pydantic validates it; the comma-separated lists are split by their validator).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, ValidationError, field_validator


class ConfigurationError(Exception):
    """A setting the process cannot run without is missing or wrong: it refuses to start."""


API_RATE_LIMIT_PER_S = 30  # TFC's limit per token
QUEUE_URL_PREFIX = "TERRACE_QUEUE_URL_"  # TERRACE_QUEUE_URL_<NAME>: one variable per logical queue


def _optional(name: str) -> Any:
    """A setting that is None unless the variable `name` is set (and not empty)."""
    return Field(default=None, validation_alias=name)


class Settings(BaseModel):
    """Where Terrace's resources are and how it behaves. The same fields exist locally and on AWS."""

    model_config = ConfigDict(
        frozen=True,
        extra="ignore",
        validate_by_name=True,
        validate_by_alias=True,
        validate_default=True,
    )

    table_name: str = Field(validation_alias="TERRACE_TABLE")
    blob_bucket: str = Field(validation_alias="TERRACE_BLOB_BUCKET")
    # logical queue name -> URL, from the TERRACE_QUEUE_URL_<NAME> variables
    queue_urls: dict[str, str] = Field(default_factory=dict, validation_alias="TERRACE_QUEUE_URLS")
    public_url: str = Field(default="https://localhost:8443", validation_alias="TERRACE_PUBLIC_URL")  # absolute links
    region: str = Field(default="us-east-1", validation_alias=AliasChoices("AWS_REGION", "AWS_DEFAULT_REGION"))
    aws_endpoint_url: str | None = _optional("TERRACE_AWS_ENDPOINT_URL")  # moto server in local mode
    # the embedded server's data (SQLite, blobs, key): bootstrap.build_embedded
    data_dir: str | None = _optional("TERRACE_DATA_DIR")
    kms_key_id: str | None = _optional("TERRACE_KMS_KEY_ID")
    # on AWS without a customer-managed key: the base64 AES key sealing sensitive values, read from an SSM
    # SecureString parameter (data_key_arn) by the composition root; KMS (kms_key_id) then only opens old values
    data_key: str = Field(default="", validation_alias="TERRACE_DATA_KEY", repr=False)
    data_key_arn: str | None = _optional("TERRACE_DATA_KEY_ARN")
    # on AWS: the header value CloudFront adds to every request (web/origin_verify.py); empty: no check
    origin_verify: str = Field(default="", validation_alias="TERRACE_ORIGIN_VERIFY", repr=False)
    url_signing_secret: str = Field(
        default="", validation_alias="TERRACE_URL_SIGNING_SECRET", repr=False
    )  # HMAC key of signed URLs
    presign_ttl_s: int = Field(default=900, validation_alias="TERRACE_PRESIGN_TTL_S")
    # audit events expire this many days after they were recorded (the table's TTL); 0 keeps them
    audit_retention_days: int = Field(default=365, ge=0, le=3650, validation_alias="TERRACE_AUDIT_RETENTION_DAYS")
    # on AWS: a CloudWatch Logs group the audit export also sends every event to (a stream per organization)
    audit_log_group: str = Field(default="", validation_alias="TERRACE_AUDIT_LOG_GROUP")
    max_request_bytes: int = Field(
        default=6 * 1024 * 1024, validation_alias="TERRACE_MAX_REQUEST_BYTES"
    )  # Lambda's limit
    # raw bytes; base64 of this fits the payload limit
    max_inline_state_bytes: int = Field(default=4 * 1024 * 1024, validation_alias="TERRACE_MAX_INLINE_STATE_BYTES")
    max_config_bytes: int = Field(default=512 * 1024 * 1024, validation_alias="TERRACE_MAX_CONFIG_BYTES")
    # the http backend answers a GET of a state larger than this with a 307 to a presigned URL (a Lambda answer
    # holds 6 MB); the indexer skips states larger than the other (it parses a whole state in its 512 MB)
    http_state_redirect_bytes: int = Field(default=1024 * 1024, validation_alias="TERRACE_HTTP_STATE_REDIRECT_BYTES")
    # json-output-redacted of a plan JSON larger than this is stored at finish and answered with a 307 to it
    plan_json_redirect_bytes: int = Field(default=1024 * 1024, validation_alias="TERRACE_PLAN_JSON_REDIRECT_BYTES")
    max_indexed_state_bytes: int = Field(default=48 * 1024 * 1024, validation_alias="TERRACE_MAX_INDEXED_STATE_BYTES")
    # an OPA policy evaluation (a child process per policy set): wall-clock and CPU seconds, resident memory; at
    # most 20 s, so one set and the work around it fit in one invocation of the events function (30 s on AWS)
    policy_timeout_s: float = Field(default=10.0, gt=0, le=20, validation_alias="TERRACE_POLICY_TIMEOUT_S")
    policy_memory_mb: int = Field(default=512, validation_alias="TERRACE_POLICY_MEMORY_MB")
    # on AWS: the Lambda function that evaluates policies (a role with nothing but its logs); unset: the engine's
    # child process runs beside this one (the embedded server, the moto stack, tests)
    policy_function: str | None = _optional("TERRACE_POLICY_FUNCTION")
    # policy sets of one organization evaluated at once, across every events worker (services/policies/
    # evaluation_slots.py): an organization's slow policies never hold the handlers other organizations need
    policy_concurrency_per_organization: int = Field(
        default=2, ge=1, validation_alias="TERRACE_POLICY_CONCURRENCY_PER_ORGANIZATION"
    )
    bootstrap_token_secret_arn: str | None = _optional("TERRACE_BOOTSTRAP_SECRET_ARN")
    # on AWS: resolved into url_signing_secret by the composition root
    url_signing_secret_arn: str | None = _optional("TERRACE_URL_SIGNING_SECRET_ARN")
    scaler_function: str | None = _optional("TERRACE_SCALER_FUNCTION")  # on AWS: invoked after enqueueing a job
    # on AWS: the logs function (functions/logs), warmed up as an organization's warm window opens
    logs_function: str | None = _optional("TERRACE_LOGS_FUNCTION")
    ecs_cluster: str | None = _optional("TERRACE_ECS_CLUSTER")
    runner_task_definition: str | None = _optional("TERRACE_RUNNER_TASK_DEFINITION")
    runner_container_name: str = Field(default="runner", validation_alias="TERRACE_RUNNER_CONTAINER")
    # the runner tasks' role: a runner on ECS enrolls by proving it is this role's session of its task
    # (`domain/runner_identity.py`), checked through `sts_endpoint` (default: the region's STS endpoint)
    runner_task_role_arn: str | None = _optional("TERRACE_RUNNER_TASK_ROLE_ARN")
    sts_endpoint: str | None = _optional("TERRACE_STS_ENDPOINT")
    runner_subnets: tuple[str, ...] = Field(default=(), validation_alias="TERRACE_RUNNER_SUBNETS")
    runner_security_groups: tuple[str, ...] = Field(default=(), validation_alias="TERRACE_RUNNER_SECURITY_GROUPS")
    runner_assign_public_ip: bool = Field(default=True, validation_alias="TERRACE_RUNNER_PUBLIC_IP")
    # lanes whose runners start on Fargate Spot (AWS: "speculative"; FARGATE when Spot has no capacity)
    runner_spot_lanes: tuple[str, ...] = Field(default=(), validation_alias="TERRACE_RUNNER_SPOT_LANES")
    # CloudWatch log group of the Fargate runners (AWS only): UI links
    runner_log_group: str | None = _optional("TERRACE_RUNNER_LOG_GROUP")
    max_runners: int = Field(default=4, validation_alias="TERRACE_MAX_RUNNERS")
    # 0: only max_runners limits an organization
    max_runners_per_organization: int = Field(default=0, validation_alias="TERRACE_MAX_RUNNERS_PER_ORGANIZATION")
    # idle runners kept alive for each organization that ran in the last day (they never idle out)
    warm_runners: int = Field(default=0, ge=0, validation_alias="TERRACE_WARM_RUNNERS")
    # the warm window (services/runs/warm_window.py): one runner kept this many minutes after an organization's
    # activity (a workspace opened by a person or a CLI, a configuration version, a run); 0: off. The stack sets 15
    # (infra/settings.py); locally a runner starts in a fraction of a second, so it stays off
    warm_window_minutes: int = Field(default=0, ge=0, le=120, validation_alias="TERRACE_WARM_WINDOW_MINUTES")
    # people sign in to the UI through this OpenID Connect issuer when set (services/access/oidc.py)
    oidc_issuer: str | None = _optional("TERRACE_OIDC_ISSUER")
    oidc_client_id: str = Field(default="", validation_alias="TERRACE_OIDC_CLIENT_ID")
    oidc_client_secret: str = Field(default="", validation_alias="TERRACE_OIDC_CLIENT_SECRET", repr=False)
    # on AWS: resolved into oidc_client_secret by the composition root
    oidc_client_secret_arn: str | None = _optional("TERRACE_OIDC_CLIENT_SECRET_ARN")
    oidc_groups_claim: str = Field(default="groups", validation_alias="TERRACE_OIDC_GROUPS_CLAIM")
    # the deployment's GitHub App (adapters/github_app.py): workspaces connect through its installations, each
    # organization only through the installations of the GitHub accounts named for it in github_app_installations
    # ("acme=octo-org,octocat;ops=ops-team"; "*=*": every organization, every installation)
    github_app_id: str = Field(default="", validation_alias="TERRACE_GITHUB_APP_ID")
    github_app_slug: str = Field(default="", validation_alias="TERRACE_GITHUB_APP_SLUG")
    github_app_private_key: str = Field(default="", validation_alias="TERRACE_GITHUB_APP_PRIVATE_KEY", repr=False)
    github_app_private_key_arn: str | None = _optional("TERRACE_GITHUB_APP_PRIVATE_KEY_ARN")
    github_app_webhook_secret: str = Field(default="", validation_alias="TERRACE_GITHUB_APP_WEBHOOK_SECRET", repr=False)
    github_app_webhook_secret_arn: str | None = _optional("TERRACE_GITHUB_APP_WEBHOOK_SECRET_ARN")
    github_app_api_url: str = Field(default="https://api.github.com", validation_alias="TERRACE_GITHUB_APP_API_URL")
    github_app_http_url: str = Field(default="https://github.com", validation_alias="TERRACE_GITHUB_APP_HTTP_URL")
    github_app_installations: str = Field(default="", validation_alias="TERRACE_GITHUB_APP_INSTALLATIONS")
    # job state machine timings (seconds); tests and local mode shorten them
    job_heartbeat_s: int = Field(default=10, validation_alias="TERRACE_JOB_HEARTBEAT_S")
    job_heartbeat_timeout_s: int = Field(default=45, validation_alias="TERRACE_JOB_HEARTBEAT_TIMEOUT_S")
    job_max_attempts: int = Field(default=5, validation_alias="TERRACE_JOB_MAX_ATTEMPTS")
    job_retry_base_s: int = Field(default=2, validation_alias="TERRACE_JOB_RETRY_BASE_S")
    queued_deadline_s: int = Field(default=3600, validation_alias="TERRACE_QUEUED_DEADLINE_S")
    queued_resend_s: int = Field(default=120, validation_alias="TERRACE_QUEUED_RESEND_S")
    phase_deadline_s: int = Field(default=4 * 3600, validation_alias="TERRACE_PHASE_DEADLINE_S")
    # how often a workspace with health assessments on is assessed (each at its own offset in the interval)
    assessment_interval_s: int = Field(default=24 * 3600, ge=1, validation_alias="TERRACE_ASSESSMENT_INTERVAL_S")
    # AWS: the SSM path whose SecureString parameters hold the workload identity signing keys (one per key)
    workload_identity_keys_path: str = Field(
        default="/terrace/workload-identity", validation_alias="TERRACE_WORKLOAD_IDENTITY_KEYS_PATH"
    )
    # embedded: the JSON key file holding the customers' keys of Hold Your Own Key (`adapters/file_key_wrapper.py`)
    hyok_key_file: str | None = _optional("TERRACE_HYOK_KEY_FILE")
    confirm_deadline_s: int = Field(default=14 * 24 * 3600, validation_alias="TERRACE_CONFIRM_DEADLINE_S")
    force_cancel_cooloff_s: int = Field(default=10, validation_alias="TERRACE_FORCE_CANCEL_COOLOFF_S")
    run_token_ttl_s: int = Field(default=6 * 3600, validation_alias="TERRACE_RUN_TOKEN_TTL_S")
    # a runner's token; it takes no new job in its last phase_deadline_s
    runner_token_ttl_s: int = Field(default=24 * 3600, validation_alias="TERRACE_RUNNER_TOKEN_TTL_S")
    # a log-read URL works this long, or until its phase ended this long ago
    log_url_ttl_s: int = Field(default=5 * 60, validation_alias="TERRACE_LOG_URL_TTL_S")
    # the origin log-read URLs point at (empty: public_url). On AWS the logs function's URL (functions/logs): the
    # CLI's log reads skip CloudFront and the HTTP API, which a signed URL needs neither of
    log_read_url: str = Field(default="", validation_alias="TERRACE_LOG_READ_URL")
    # how long a log read with nothing new holds its request for the next bytes; 0 on AWS: a held Lambda is billed
    # for the wait, and the CLI polls again anyway (`services/runs/logs.py`)
    log_read_wait_s: float = Field(default=2.0, ge=0, le=20, validation_alias="TERRACE_LOG_READ_WAIT_S")
    # X-Terraform-Snapshot-Interval on state-version responses: clients with a `cloud` block save intermediate
    # state snapshots at most this often during an apply; 0 disables them
    state_snapshot_interval_s: int = Field(default=300, validation_alias="TERRACE_STATE_SNAPSHOT_INTERVAL_S")
    # the versions runners hold, `terraform=1.11.4,opentofu=1.9.4,...` (TERRACE_TOOL_CATALOG): on AWS the
    # versions the runner image bakes, locally the versions found in the local catalog
    tool_catalog: str = Field(default="", validation_alias="TERRACE_TOOL_CATALOG")
    # runners fetch an official release they do not hold from the release mirror (runner/tool_fetch.py): runs
    # resolve their terraform-version among the whole enabled catalog; off: among the versions runners hold
    tool_downloads: bool = Field(default=True, validation_alias="TERRACE_TOOL_DOWNLOADS")
    # the release mirrors, in the vendors' layout (empty: the vendors' public release sites); the runners get the same
    # the runners' architecture whose release archives the blob bucket keeps for all runners (`tools/…`: one fetch
    # from the mirror per deployment, then S3); "" keeps none (the embedded server's runners share a folder)
    tool_blob_cache: str = Field(default="", validation_alias="TERRACE_TOOL_BLOB_CACHE")
    tool_mirror_terraform: str = Field(default="", validation_alias="TERRACE_TOOL_MIRROR_TERRAFORM")
    tool_mirror_opentofu: str = Field(default="", validation_alias="TERRACE_TOOL_MIRROR_OPENTOFU")
    # armored OpenPGP keys (files or folders of *.asc) trusted to sign SHA256SUMS, for the runners the server starts
    tool_trusted_keys: str = Field(default="", validation_alias="TERRACE_TOOL_TRUSTED_KEYS")
    # the tool (`iac-platform`) of a new workspace that names none and whose version both tools release; a workspace
    # stored before workspaces had a tool resolves with it first
    default_tool: Literal["terraform", "opentofu"] = Field(default="terraform", validation_alias="TERRACE_DEFAULT_TOOL")
    # requests per second per API token under /api/v2 (`X-RateLimit-Limit`); 0 = no limit. The processes that
    # serve clients (`from_env` on AWS, the local stack) use TFC's 30; Settings built in tests have none
    api_rate_limit_per_s: int = Field(default=0, validation_alias="TERRACE_API_RATE_LIMIT_PER_S")
    # hosts, addresses and networks (comma-separated: `127.0.0.0/8,::1,hooks.internal`) the server may send
    # notifications and run task requests to although they are loopback, private or link-local
    # (domain/destinations.py); `terrace dev` allows loopback
    outbound_allow: tuple[str, ...] = Field(default=(), validation_alias="TERRACE_OUTBOUND_ALLOW")
    # the server's tenant children (git clones keep the network) kept from link-local addresses as root with iptables
    # (`local/embedded.py: guard_link_local`): `auto` on ECS or EC2, `true`, `false`
    tenant_block_link_local: Literal["auto", "true", "false"] = Field(
        default="auto", validation_alias="TERRACE_TENANT_BLOCK_LINK_LOCAL"
    )
    # the deployment's own addresses (comma-separated CIDRs), published at `GET /api/meta/ip-ranges` in HCP's shape
    # (domain/ip_ranges.py): where clients reach the API from the deployment's side, and where its notifications,
    # policy evaluations and forge calls come from; unset: the deployment publishes none (it never guesses)
    ip_ranges_api: tuple[str, ...] = Field(default=(), validation_alias="TERRACE_IP_RANGES_API")
    ip_ranges_notifications: tuple[str, ...] = Field(default=(), validation_alias="TERRACE_IP_RANGES_NOTIFICATIONS")
    ip_ranges_sentinel: tuple[str, ...] = Field(default=(), validation_alias="TERRACE_IP_RANGES_SENTINEL")
    ip_ranges_vcs: tuple[str, ...] = Field(default=(), validation_alias="TERRACE_IP_RANGES_VCS")
    # notification e-mails: SMTP on the embedded server (no host: e-mail deliveries fail, saying so), SES on AWS;
    # the sender is TERRACE_MAIL_FROM (on SES a verified identity)
    smtp_host: str = Field(default="", validation_alias="TERRACE_SMTP_HOST")
    smtp_port: int = Field(default=25, validation_alias="TERRACE_SMTP_PORT")
    smtp_username: str = Field(default="", validation_alias="TERRACE_SMTP_USERNAME")
    smtp_password: str = Field(default="", validation_alias="TERRACE_SMTP_PASSWORD", repr=False)
    smtp_starttls: bool = Field(default=False, validation_alias="TERRACE_SMTP_STARTTLS")
    mail_from: str = Field(default="terrace@localhost", validation_alias="TERRACE_MAIL_FROM")
    # a failed notification delivery is tried again after base, 2*base, 4*base, 8*base seconds (5 attempts)
    notification_retry_base_s: int = Field(default=10, ge=0, validation_alias="TERRACE_NOTIFICATION_RETRY_BASE_S")

    @field_validator("runner_subnets", "runner_security_groups", "runner_spot_lanes", "outbound_allow", mode="before")
    @classmethod
    def _comma_separated(cls, value: Any) -> Any:
        return tuple(part for part in value.split(",") if part) if isinstance(value, str) else value

    @field_validator("ip_ranges_api", "ip_ranges_notifications", "ip_ranges_sentinel", "ip_ranges_vcs", mode="before")
    @classmethod
    def _cidrs(cls, value: Any) -> Any:
        from terrace.domain.ip_ranges import cidrs

        return cidrs(value.split(",") if isinstance(value, str) else value)

    @field_validator("public_url", "log_read_url")
    @classmethod
    def _no_trailing_slash(cls, value: str) -> str:
        return value.rstrip("/")

    @field_validator("oidc_issuer")
    @classmethod
    def _issuer(cls, value: str | None) -> str | None:
        return (value or "").rstrip("/") or None

    def tool_versions(self) -> dict[str, list[str]]:
        """tool_catalog as {tool: [versions]} (unknown tools and malformed entries are skipped)."""
        catalog: dict[str, list[str]] = {"terraform": [], "opentofu": []}
        for entry in self.tool_catalog.split(","):
            tool, _, version = entry.strip().partition("=")
            if tool in catalog and version.strip():
                catalog[tool].append(version.strip())
        return catalog

    def require_url_signing_secret(self) -> None:
        """The API signs log-read URLs and web sessions: it never starts with an empty key."""
        if not self.url_signing_secret.strip():
            raise ConfigurationError(
                "no URL-signing secret: set TERRACE_URL_SIGNING_SECRET, or TERRACE_URL_SIGNING_SECRET_ARN on AWS"
            )

    def replace(self, **changes: Any) -> Settings:
        """A copy with some fields changed (validated as at construction)."""
        return type(self)(**{**self.model_dump(), **changes})

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        """The settings the TERRACE_* variables of `env` (the process environment by default) describe."""
        env = dict(os.environ if env is None else env)
        values = _environment_values(env)
        values["TERRACE_QUEUE_URLS"] = {
            key.removeprefix(QUEUE_URL_PREFIX).lower().replace("_", "-"): value
            for key, value in env.items()
            if key.startswith(QUEUE_URL_PREFIX)
        }
        if values.get("TERRACE_DATA_DIR"):  # the embedded server names no table or bucket
            values.setdefault("TERRACE_TABLE", "embedded")
            values.setdefault("TERRACE_BLOB_BUCKET", "embedded")
        values.setdefault("TERRACE_API_RATE_LIMIT_PER_S", API_RATE_LIMIT_PER_S)
        try:
            return cls(**values)
        except ValidationError as exc:
            raise ConfigurationError(_one_line(exc)) from None


def _environment_values(env: Mapping[str, str]) -> dict[str, Any]:
    """The variables `Settings`' fields read from `env`, keyed by their names: for each field the first of its
    names that is set and not empty (`AWS_REGION` before `AWS_DEFAULT_REGION`), its value as it is."""
    values: dict[str, Any] = {}
    for field in Settings.model_fields.values():
        alias = field.validation_alias
        names = alias.choices if isinstance(alias, AliasChoices) else [alias]
        found = next((name for name in names if isinstance(name, str) and env.get(name)), None)
        if found is not None:
            values[found] = env[found]
    return values


def _one_line(exc: ValidationError) -> str:
    """`TERRACE_MAX_RUNNERS: Input should be a valid integer (got 'many'); ...`: each bad variable once."""
    problems = []
    for error in exc.errors():
        name = ".".join(str(part) for part in error["loc"]) or "settings"
        got = f" (got {error['input']!r})" if error["type"] != "missing" else ""
        problems.append(f"{name}: {error['msg']}{got}")
    return "invalid settings: " + "; ".join(problems)
