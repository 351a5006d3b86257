"""terrace.config.Settings: the TERRACE_* environment as its reader (the rules of pydantic-settings' environment
source) reads it, the same names and defaults as before, keyword construction that ignores the environment, and
one-line errors for bad values."""

from __future__ import annotations

import pytest
from terrace.cli import app
from terrace.config import ConfigurationError, Settings
from typer.testing import CliRunner

BASE = {"TERRACE_TABLE": "t", "TERRACE_BLOB_BUCKET": "b"}

# field -> (variable, value set, value read, default): every variable Settings reads, by its exact name, and
# what from_env gives when it is unset (TERRACE_TABLE and TERRACE_BLOB_BUCKET are required)
VARIABLES = {
    "table_name": ("TERRACE_TABLE", "tbl", "tbl", "t"),
    "blob_bucket": ("TERRACE_BLOB_BUCKET", "bkt", "bkt", "b"),
    "public_url": ("TERRACE_PUBLIC_URL", "https://tf.example.com/", "https://tf.example.com", "https://localhost:8443"),
    "region": ("AWS_REGION", "eu-west-1", "eu-west-1", "us-east-1"),
    "aws_endpoint_url": ("TERRACE_AWS_ENDPOINT_URL", "http://moto:5000", "http://moto:5000", None),
    "data_dir": ("TERRACE_DATA_DIR", "/srv/terrace", "/srv/terrace", None),
    "kms_key_id": ("TERRACE_KMS_KEY_ID", "key-1", "key-1", None),
    "data_key": ("TERRACE_DATA_KEY", "a2V5", "a2V5", ""),
    "data_key_arn": ("TERRACE_DATA_KEY_ARN", "arn:d", "arn:d", None),
    "origin_verify": ("TERRACE_ORIGIN_VERIFY", "cf", "cf", ""),
    "url_signing_secret": ("TERRACE_URL_SIGNING_SECRET", "s3cret", "s3cret", ""),
    "presign_ttl_s": ("TERRACE_PRESIGN_TTL_S", "60", 60, 900),
    "max_request_bytes": ("TERRACE_MAX_REQUEST_BYTES", "1000", 1000, 6 * 1024 * 1024),
    "max_inline_state_bytes": ("TERRACE_MAX_INLINE_STATE_BYTES", "2000", 2000, 4 * 1024 * 1024),
    "max_config_bytes": ("TERRACE_MAX_CONFIG_BYTES", "3000", 3000, 512 * 1024 * 1024),
    "http_state_redirect_bytes": ("TERRACE_HTTP_STATE_REDIRECT_BYTES", "4000", 4000, 1024 * 1024),
    "plan_json_redirect_bytes": ("TERRACE_PLAN_JSON_REDIRECT_BYTES", "4000", 4000, 1024 * 1024),
    "max_indexed_state_bytes": ("TERRACE_MAX_INDEXED_STATE_BYTES", "5000", 5000, 48 * 1024 * 1024),
    "policy_timeout_s": ("TERRACE_POLICY_TIMEOUT_S", "2.5", 2.5, 10.0),
    "policy_memory_mb": ("TERRACE_POLICY_MEMORY_MB", "256", 256, 512),
    "policy_function": ("TERRACE_POLICY_FUNCTION", "policy", "policy", None),
    "policy_concurrency_per_organization": ("TERRACE_POLICY_CONCURRENCY_PER_ORGANIZATION", "3", 3, 2),
    "runner_task_role_arn": ("TERRACE_RUNNER_TASK_ROLE_ARN", "arn:aws:iam::1:role/r", "arn:aws:iam::1:role/r", None),
    "sts_endpoint": ("TERRACE_STS_ENDPOINT", "https://sts.example/", "https://sts.example/", None),
    "bootstrap_token_secret_arn": ("TERRACE_BOOTSTRAP_SECRET_ARN", "arn:b", "arn:b", None),
    "url_signing_secret_arn": ("TERRACE_URL_SIGNING_SECRET_ARN", "arn:u", "arn:u", None),
    "scaler_function": ("TERRACE_SCALER_FUNCTION", "scaler", "scaler", None),
    "logs_function": ("TERRACE_LOGS_FUNCTION", "logs", "logs", None),
    "ecs_cluster": ("TERRACE_ECS_CLUSTER", "cluster", "cluster", None),
    "runner_task_definition": ("TERRACE_RUNNER_TASK_DEFINITION", "td:1", "td:1", None),
    "runner_container_name": ("TERRACE_RUNNER_CONTAINER", "box", "box", "runner"),
    "runner_subnets": ("TERRACE_RUNNER_SUBNETS", "subnet-a,subnet-b", ("subnet-a", "subnet-b"), ()),
    "outbound_allow": ("TERRACE_OUTBOUND_ALLOW", "127.0.0.0/8,hooks.internal", ("127.0.0.0/8", "hooks.internal"), ()),
    "ip_ranges_api": ("TERRACE_IP_RANGES_API", "192.0.2.0/24,2001:db8::/32", ("192.0.2.0/24", "2001:db8::/32"), ()),
    "ip_ranges_notifications": ("TERRACE_IP_RANGES_NOTIFICATIONS", "198.51.100.7", ("198.51.100.7/32",), ()),
    "ip_ranges_sentinel": ("TERRACE_IP_RANGES_SENTINEL", "198.51.100.0/24", ("198.51.100.0/24",), ()),
    "ip_ranges_vcs": ("TERRACE_IP_RANGES_VCS", "203.0.113.0/28", ("203.0.113.0/28",), ()),
    "runner_security_groups": ("TERRACE_RUNNER_SECURITY_GROUPS", "sg-1,", ("sg-1",), ()),
    "runner_assign_public_ip": ("TERRACE_RUNNER_PUBLIC_IP", "false", False, True),
    "runner_spot_lanes": ("TERRACE_RUNNER_SPOT_LANES", "speculative", ("speculative",), ()),
    "tenant_block_link_local": ("TERRACE_TENANT_BLOCK_LINK_LOCAL", "true", "true", "auto"),
    "runner_log_group": ("TERRACE_RUNNER_LOG_GROUP", "/ecs/runner", "/ecs/runner", None),
    "max_runners": ("TERRACE_MAX_RUNNERS", "9", 9, 4),
    "max_runners_per_organization": ("TERRACE_MAX_RUNNERS_PER_ORGANIZATION", "2", 2, 0),
    "warm_runners": ("TERRACE_WARM_RUNNERS", "1", 1, 0),
    "warm_window_minutes": ("TERRACE_WARM_WINDOW_MINUTES", "15", 15, 0),
    "log_read_url": ("TERRACE_LOG_READ_URL", "https://logs.example.com/", "https://logs.example.com", ""),
    "oidc_issuer": ("TERRACE_OIDC_ISSUER", "https://idp.example.com/", "https://idp.example.com", None),
    "oidc_client_id": ("TERRACE_OIDC_CLIENT_ID", "cid", "cid", ""),
    "oidc_client_secret": ("TERRACE_OIDC_CLIENT_SECRET", "csec", "csec", ""),
    "oidc_client_secret_arn": ("TERRACE_OIDC_CLIENT_SECRET_ARN", "arn:o", "arn:o", None),
    "oidc_groups_claim": ("TERRACE_OIDC_GROUPS_CLAIM", "roles", "roles", "groups"),
    "github_app_id": ("TERRACE_GITHUB_APP_ID", "123", "123", ""),
    "github_app_slug": ("TERRACE_GITHUB_APP_SLUG", "terrace", "terrace", ""),
    "github_app_private_key": ("TERRACE_GITHUB_APP_PRIVATE_KEY", "pem", "pem", ""),
    "github_app_private_key_arn": ("TERRACE_GITHUB_APP_PRIVATE_KEY_ARN", "arn:k", "arn:k", None),
    "github_app_webhook_secret": ("TERRACE_GITHUB_APP_WEBHOOK_SECRET", "whs", "whs", ""),
    "github_app_webhook_secret_arn": ("TERRACE_GITHUB_APP_WEBHOOK_SECRET_ARN", "arn:w", "arn:w", None),
    "github_app_api_url": (
        "TERRACE_GITHUB_APP_API_URL",
        "https://ghe/api/v3",
        "https://ghe/api/v3",
        "https://api.github.com",
    ),
    "github_app_http_url": ("TERRACE_GITHUB_APP_HTTP_URL", "https://ghe", "https://ghe", "https://github.com"),
    "github_app_installations": ("TERRACE_GITHUB_APP_INSTALLATIONS", "acme=octo", "acme=octo", ""),
    "job_heartbeat_s": ("TERRACE_JOB_HEARTBEAT_S", "1", 1, 10),
    "job_heartbeat_timeout_s": ("TERRACE_JOB_HEARTBEAT_TIMEOUT_S", "2", 2, 45),
    "job_max_attempts": ("TERRACE_JOB_MAX_ATTEMPTS", "3", 3, 5),
    "job_retry_base_s": ("TERRACE_JOB_RETRY_BASE_S", "4", 4, 2),
    "queued_deadline_s": ("TERRACE_QUEUED_DEADLINE_S", "5", 5, 3600),
    "queued_resend_s": ("TERRACE_QUEUED_RESEND_S", "6", 6, 120),
    "phase_deadline_s": ("TERRACE_PHASE_DEADLINE_S", "7", 7, 4 * 3600),
    "assessment_interval_s": ("TERRACE_ASSESSMENT_INTERVAL_S", "30", 30, 24 * 3600),
    "workload_identity_keys_path": (
        "TERRACE_WORKLOAD_IDENTITY_KEYS_PATH",
        "/t/wid",
        "/t/wid",
        "/terrace/workload-identity",
    ),
    "hyok_key_file": ("TERRACE_HYOK_KEY_FILE", "/etc/terrace/hyok-keys.json", "/etc/terrace/hyok-keys.json", None),
    "confirm_deadline_s": ("TERRACE_CONFIRM_DEADLINE_S", "8", 8, 14 * 24 * 3600),
    "force_cancel_cooloff_s": ("TERRACE_FORCE_CANCEL_COOLOFF_S", "9", 9, 10),
    "run_token_ttl_s": ("TERRACE_RUN_TOKEN_TTL_S", "10", 10, 6 * 3600),
    "runner_token_ttl_s": ("TERRACE_RUNNER_TOKEN_TTL_S", "11", 11, 24 * 3600),
    "log_url_ttl_s": ("TERRACE_LOG_URL_TTL_S", "12", 12, 5 * 60),
    "log_read_wait_s": ("TERRACE_LOG_READ_WAIT_S", "0", 0.0, 2.0),
    "audit_retention_days": ("TERRACE_AUDIT_RETENTION_DAYS", "30", 30, 365),
    "audit_log_group": ("TERRACE_AUDIT_LOG_GROUP", "terrace-audit", "terrace-audit", ""),
    "state_snapshot_interval_s": ("TERRACE_STATE_SNAPSHOT_INTERVAL_S", "13", 13, 300),
    "tool_catalog": ("TERRACE_TOOL_CATALOG", "terraform=1.0.3", "terraform=1.0.3", ""),
    "tool_downloads": ("TERRACE_TOOL_DOWNLOADS", "false", False, True),
    "tool_blob_cache": ("TERRACE_TOOL_BLOB_CACHE", "arm64", "arm64", ""),
    "tool_mirror_terraform": ("TERRACE_TOOL_MIRROR_TERRAFORM", "https://m/tf", "https://m/tf", ""),
    "tool_mirror_opentofu": ("TERRACE_TOOL_MIRROR_OPENTOFU", "https://m/tofu", "https://m/tofu", ""),
    "tool_trusted_keys": ("TERRACE_TOOL_TRUSTED_KEYS", "/etc/keys", "/etc/keys", ""),
    "default_tool": ("TERRACE_DEFAULT_TOOL", "opentofu", "opentofu", "terraform"),
    "api_rate_limit_per_s": ("TERRACE_API_RATE_LIMIT_PER_S", "7", 7, 30),
    "smtp_host": ("TERRACE_SMTP_HOST", "mail.internal", "mail.internal", ""),
    "smtp_port": ("TERRACE_SMTP_PORT", "587", 587, 25),
    "smtp_username": ("TERRACE_SMTP_USERNAME", "terrace", "terrace", ""),
    "smtp_password": ("TERRACE_SMTP_PASSWORD", "pw", "pw", ""),
    "smtp_starttls": ("TERRACE_SMTP_STARTTLS", "true", True, False),
    "mail_from": ("TERRACE_MAIL_FROM", "tf@example.com", "tf@example.com", "terrace@localhost"),
    "notification_retry_base_s": ("TERRACE_NOTIFICATION_RETRY_BASE_S", "3", 3, 10),
}


def test_every_field_is_read_from_its_variable() -> None:
    assert set(VARIABLES) | {"queue_urls"} == set(Settings.model_fields)
    settings = Settings.from_env({variable: raw for variable, raw, _, _ in VARIABLES.values()})
    for name, (variable, _, expected, _) in VARIABLES.items():
        assert getattr(settings, name) == expected, variable


def test_defaults_are_the_documented_ones() -> None:
    settings = Settings.from_env(BASE)
    assert settings.queue_urls == {}
    assert {name: getattr(settings, name) for name in VARIABLES} == {name: row[3] for name, row in VARIABLES.items()}


def test_an_empty_variable_is_an_unset_one() -> None:
    settings = Settings.from_env(
        {**BASE, "TERRACE_KMS_KEY_ID": "", "TERRACE_MAX_RUNNERS": "", "TERRACE_OIDC_ISSUER": ""}
    )
    assert (settings.kms_key_id, settings.max_runners, settings.oidc_issuer) == (None, 4, None)


def test_queue_urls_come_one_variable_a_queue() -> None:
    env = {**BASE, "TERRACE_QUEUE_URL_JOBS": "https://q/jobs", "TERRACE_QUEUE_URL_RUN_EVENTS": "https://q/events"}
    assert Settings.from_env(env).queue_urls == {"jobs": "https://q/jobs", "run-events": "https://q/events"}


def test_aws_region_wins_over_the_default_region() -> None:
    assert Settings.from_env({**BASE, "AWS_DEFAULT_REGION": "eu-central-1"}).region == "eu-central-1"
    both = {**BASE, "AWS_REGION": "ap-south-1", "AWS_DEFAULT_REGION": "eu-central-1"}
    assert Settings.from_env(both).region == "ap-south-1"


def test_a_data_directory_needs_no_table_or_bucket() -> None:
    settings = Settings.from_env({"TERRACE_DATA_DIR": "/srv/terrace"})
    assert (settings.table_name, settings.blob_bucket) == ("embedded", "embedded")


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({}, "invalid settings: TERRACE_TABLE: Field required; TERRACE_BLOB_BUCKET: Field required"),
        ({**BASE, "TERRACE_MAX_RUNNERS": "many"}, "TERRACE_MAX_RUNNERS: Input should be a valid integer"),
        ({**BASE, "TERRACE_RUNNER_PUBLIC_IP": "maybe"}, "TERRACE_RUNNER_PUBLIC_IP: Input should be a valid boolean"),
        ({**BASE, "TERRACE_TENANT_BLOCK_LINK_LOCAL": "yes"}, "TERRACE_TENANT_BLOCK_LINK_LOCAL: Input should be"),
    ],
)
def test_a_bad_environment_is_refused_in_one_line_naming_the_variable(env: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigurationError) as refused:
        Settings.from_env(env)
    assert message in str(refused.value)
    assert "\n" not in str(refused.value)


def test_keyword_construction_ignores_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for variable, value in {**BASE, "TERRACE_MAX_RUNNERS": "77", "TERRACE_PUBLIC_URL": "https://elsewhere"}.items():
        monkeypatch.setenv(variable, value)
    settings = Settings(table_name="m", blob_bucket="m")
    assert (settings.max_runners, settings.public_url, settings.api_rate_limit_per_s) == (
        4,
        "https://localhost:8443",
        0,
    )
    assert (Settings.from_env().max_runners, Settings.from_env().public_url) == (77, "https://elsewhere")


def test_settings_are_frozen_and_replace_validates() -> None:
    settings = Settings(table_name="m", blob_bucket="m", url_signing_secret="s")
    with pytest.raises(ValueError):
        settings.max_runners = 2  # type: ignore[misc]
    assert settings.replace(max_runners=2).max_runners == 2
    assert settings.max_runners == 4
    with pytest.raises(ValueError):
        settings.replace(max_runners="many")
    assert "s3cret" not in repr(Settings(table_name="m", blob_bucket="m", url_signing_secret="s3cret"))


def test_the_cli_refuses_a_bad_environment_in_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TERRACE_TABLE", "t")
    monkeypatch.setenv("TERRACE_BLOB_BUCKET", "b")
    monkeypatch.setenv("TERRACE_JOB_HEARTBEAT_S", "soon")
    result = CliRunner().invoke(app, ["user", "create", "someone"])
    assert result.exit_code == 1
    assert "error: invalid settings: TERRACE_JOB_HEARTBEAT_S: Input should be a valid integer" in result.output
