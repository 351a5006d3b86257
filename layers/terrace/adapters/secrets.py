"""Secrets Manager: fills in secret values whose ARNs the environment names (on AWS, Lambda functions
get ARNs, never values). Each secret is fetched once per process."""

from __future__ import annotations

from functools import cache
from typing import Any

from terrace.config import Settings

# Settings field holding the value -> field holding the ARN to read it from when the value is empty.
SECRET_FIELDS = {"url_signing_secret": "url_signing_secret_arn", "oidc_client_secret": "oidc_client_secret_arn"}


def resolve_secrets(settings: Settings, client: Any = None) -> Settings:
    changes: dict[str, Any] = {
        value_field: fetch_secret(arn, settings.region, settings.aws_endpoint_url, client)
        for value_field, arn_field in SECRET_FIELDS.items()
        if not getattr(settings, value_field) and (arn := getattr(settings, arn_field))
    }
    return settings.replace(**changes) if changes else settings


def fetch_secret(arn: str, region: str, endpoint_url: str | None = None, client: Any = None) -> str:
    if client is not None:
        return str(client.get_secret_value(SecretId=arn)["SecretString"])
    return _cached_fetch(arn, region, endpoint_url)


@cache
def _cached_fetch(arn: str, region: str, endpoint_url: str | None) -> str:
    import boto3

    kwargs: dict[str, Any] = {"endpoint_url": endpoint_url} if endpoint_url else {}
    client = boto3.session.Session(region_name=region).client("secretsmanager", **kwargs)
    return str(client.get_secret_value(SecretId=arn)["SecretString"])
