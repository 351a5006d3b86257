"""The runner's AWS client for the SQS lanes (the runner secret comes from adapters/secrets.py)."""

from __future__ import annotations

from typing import Any


def _session(region: str) -> Any:
    import boto3

    return boto3.session.Session(region_name=region)


def sqs_client(region: str, endpoint_url: str | None = None) -> Any:
    from botocore.config import Config

    extra: dict[str, Any] = {"endpoint_url": endpoint_url} if endpoint_url else {}
    return _session(region).client("sqs", config=Config(retries={"max_attempts": 5, "mode": "standard"}), **extra)
