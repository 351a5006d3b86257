"""The runner's AWS clients (SQS lanes, Secrets Manager for the runner secret)."""

from __future__ import annotations

import json
from typing import Any


def _session(region: str) -> Any:
    import boto3

    return boto3.session.Session(region_name=region)


def sqs_client(region: str, endpoint_url: str | None = None) -> Any:
    from botocore.config import Config

    extra: dict[str, Any] = {"endpoint_url": endpoint_url} if endpoint_url else {}
    return _session(region).client("sqs", config=Config(retries={"max_attempts": 5, "mode": "standard"}), **extra)


def load_secret(secret_arn: str, region: str, endpoint_url: str | None = None) -> str:
    """The secret's string; a JSON object with a single value (or a `secret` key) is unwrapped."""
    extra: dict[str, Any] = {"endpoint_url": endpoint_url} if endpoint_url else {}
    raw = _session(region).client("secretsmanager", **extra).get_secret_value(SecretId=secret_arn)["SecretString"]
    try:
        doc = json.loads(raw)
    except ValueError:
        return str(raw)
    if isinstance(doc, dict):
        if "secret" in doc:
            return str(doc["secret"])
        if len(doc) == 1:
            return str(next(iter(doc.values())))
    return str(raw)
