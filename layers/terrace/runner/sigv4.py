"""AWS Signature Version 4 of one request, and the ECS task role's credentials, with the standard library only: the
runner image holds none of the API's libraries (botocore among them, `tests/infra/test_cdk_runner.py`), and a
runner signs exactly one request, its enrollment's `sts:GetCallerIdentity` (`runner/enrollment.py`).
`tests/unit/test_runner_identity_proof.py` holds the signature byte-identical to botocore's `SigV4Auth`."""

from __future__ import annotations

import hashlib
import hmac
import os
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from urllib.parse import urlsplit

import httpx

CONTAINER_CREDENTIALS_HOST = "http://169.254.170.2"  # the ECS agent's credentials endpoint (a task role's keys)


@dataclass(frozen=True)
class Credentials:
    access_key: str
    secret_key: str
    token: str | None = None


def task_role_credentials(
    env: Mapping[str, str] | None = None, transport: httpx.BaseTransport | None = None
) -> Credentials:
    """The task role's credentials from the ECS container credentials endpoint
    (`AWS_CONTAINER_CREDENTIALS_RELATIVE_URI`, which ECS sets in a task with a role)."""
    relative = (os.environ if env is None else env).get("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI")
    if not relative:
        raise RuntimeError("no task role credentials (AWS_CONTAINER_CREDENTIALS_RELATIVE_URI is not set)")
    with httpx.Client(timeout=10.0, transport=transport, trust_env=False) as client:
        answer = client.get(f"{CONTAINER_CREDENTIALS_HOST}{relative}")
        answer.raise_for_status()
        found = answer.json()
    return Credentials(found["AccessKeyId"], found["SecretAccessKey"], found.get("Token"))


def _hmac(key: bytes, text: str) -> bytes:
    return hmac.new(key, text.encode(), hashlib.sha256).digest()


def sign(
    method: str,
    url: str,
    headers: Mapping[str, str],
    body: str,
    credentials: Credentials,
    region: str,
    service: str,
    now: datetime | None = None,
) -> dict[str, str]:
    """`headers` with `X-Amz-Date`, `X-Amz-Security-Token` (temporary credentials) and `Authorization` added, every
    header and the host signed."""
    moment = (now or datetime.now(UTC)).astimezone(UTC)
    stamp, day = moment.strftime("%Y%m%dT%H%M%SZ"), moment.strftime("%Y%m%d")
    signed_headers = {**headers, "X-Amz-Date": stamp}
    if credentials.token:
        signed_headers["X-Amz-Security-Token"] = credentials.token
    parts = urlsplit(url)
    default_port = {"http": 80, "https": 443}.get(parts.scheme)
    host = parts.hostname or ""
    host = host if parts.port in (None, default_port) else f"{host}:{parts.port}"
    canonical = {name.lower(): " ".join(value.split()) for name, value in signed_headers.items()}
    canonical["host"] = host
    names = sorted(canonical)
    request = "\n".join(
        [
            method.upper(),
            parts.path or "/",
            parts.query,
            "".join(f"{name}:{canonical[name]}\n" for name in names),
            ";".join(names),
            hashlib.sha256(body.encode()).hexdigest(),
        ]
    )
    scope = f"{day}/{region}/{service}/aws4_request"
    to_sign = f"AWS4-HMAC-SHA256\n{stamp}\n{scope}\n{hashlib.sha256(request.encode()).hexdigest()}"
    key = _hmac(_hmac(_hmac(_hmac(f"AWS4{credentials.secret_key}".encode(), day), region), service), "aws4_request")
    signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    signed_headers["Authorization"] = (
        f"AWS4-HMAC-SHA256 Credential={credentials.access_key}/{scope}, "
        f"SignedHeaders={';'.join(names)}, Signature={signature}"
    )
    return signed_headers
