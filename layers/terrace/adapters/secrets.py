"""Deployment secrets: fills in secret values whose ARNs the environment names (on AWS, Lambda functions get
ARNs, never values). An ARN is an SSM SecureString parameter (`arn:...:ssm:...:parameter/...`, the stack's own
secrets: free at rest) or a Secrets Manager secret (an operator's own, e.g. an OIDC client secret). Each value
is fetched once per process."""

from __future__ import annotations

from functools import cache
from typing import Any

from terrace.config import Settings

# Settings field holding the value -> field holding the ARN to read it from when the value is empty.
SECRET_FIELDS = {
    "url_signing_secret": "url_signing_secret_arn",
    "oidc_client_secret": "oidc_client_secret_arn",
    "data_key": "data_key_arn",
    "github_app_private_key": "github_app_private_key_arn",
    "github_app_webhook_secret": "github_app_webhook_secret_arn",
}


def resolve_secrets(settings: Settings, client: Any = None) -> Settings:
    changes: dict[str, Any] = {
        value_field: fetch_secret(arn, settings.region, settings.aws_endpoint_url, client)
        for value_field, arn_field in SECRET_FIELDS.items()
        if not getattr(settings, value_field) and (arn := getattr(settings, arn_field))
    }
    return settings.replace(**changes) if changes else settings


def parameter_name(arn: str) -> str | None:
    """`/a/b` for `arn:<partition>:ssm:<region>:<account>:parameter/a/b`; None for any other ARN."""
    parts = arn.split(":", 5)
    if len(parts) == 6 and parts[2] == "ssm" and parts[5].startswith("parameter/"):
        return "/" + parts[5].removeprefix("parameter/").lstrip("/")
    return None


def fetch_secret(arn: str, region: str, endpoint_url: str | None = None, client: Any = None) -> str:
    if client is not None:
        return _read(client, arn)
    return _cached_fetch(arn, region, endpoint_url)


def _read(client: Any, arn: str) -> str:
    name = parameter_name(arn)
    if name is not None:
        return str(client.get_parameter(Name=name, WithDecryption=True)["Parameter"]["Value"])
    return str(client.get_secret_value(SecretId=arn)["SecretString"])


@cache
def _cached_fetch(arn: str, region: str, endpoint_url: str | None) -> str:
    from terrace.adapters import boto_session

    kwargs: dict[str, Any] = {"endpoint_url": endpoint_url} if endpoint_url else {}
    service = "ssm" if parameter_name(arn) is not None else "secretsmanager"
    return _read(boto_session.session(region).client(service, **kwargs), arn)
