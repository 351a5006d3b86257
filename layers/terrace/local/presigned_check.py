"""The local S3 twin checks presigned URLs as S3 does: moto accepts any signature, so a mangled or
expired upload URL would "work" locally and fail on AWS. This WSGI middleware in front of moto
recomputes the SigV4 query signature (AWS4-HMAC-SHA256, `UNSIGNED-PAYLOAD`, the dummy local secret)
of every request that carries `X-Amz-Signature` and answers S3's 403 when it does not match or has
expired. Requests signed in the Authorization header (the API's own boto3 calls) pass untouched."""

from __future__ import annotations

import hashlib
import hmac
import os
from collections.abc import Callable, Iterable
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import parse_qsl, quote, unquote

WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


def _hmac(key: bytes, text: str) -> bytes:
    return hmac.new(key, text.encode(), hashlib.sha256).digest()


def _encode(value: str) -> str:
    return quote(value, safe="-_.~")


def expected_signature(method: str, raw_path: str, query: str, headers: dict[str, str], secret: str) -> str | None:
    """The SigV4 query signature this request should carry, or None when it is not a presigned request."""
    params = parse_qsl(query, keep_blank_values=True)
    fields = dict(params)
    if fields.get("X-Amz-Algorithm") != "AWS4-HMAC-SHA256" or "X-Amz-Credential" not in fields:
        return None
    signed = fields.get("X-Amz-SignedHeaders", "host").split(";")
    canonical_query = "&".join(f"{_encode(k)}={_encode(v)}" for k, v in sorted(params) if k != "X-Amz-Signature")
    canonical_headers = "".join(f"{name}:{headers.get(name, '').strip()}\n" for name in signed)
    canonical_request = "\n".join(
        [
            method,
            quote(unquote(raw_path), safe="/~"),
            canonical_query,
            canonical_headers,
            ";".join(signed),
            "UNSIGNED-PAYLOAD",
        ]
    )
    _key_id, date, region, service, terminator = fields["X-Amz-Credential"].split("/", 4)
    scope = f"{date}/{region}/{service}/{terminator}"
    to_sign = "\n".join(
        [
            "AWS4-HMAC-SHA256",
            fields.get("X-Amz-Date", ""),
            scope,
            hashlib.sha256(canonical_request.encode()).hexdigest(),
        ]
    )
    key = _hmac(_hmac(_hmac(_hmac(f"AWS4{secret}".encode(), date), region), service), terminator)
    return hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()


def _expired(query: str, now: datetime) -> bool:
    fields = dict(parse_qsl(query))
    try:
        signed_at = datetime.strptime(fields["X-Amz-Date"], "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)
        return now > signed_at + timedelta(seconds=int(fields["X-Amz-Expires"]))
    except (KeyError, ValueError):
        return True


def _denied(start_response: Callable[..., Any], code: str, message: str) -> list[bytes]:
    body = f'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>{code}</Code><Message>{message}</Message></Error>'
    start_response("403 Forbidden", [("Content-Type", "application/xml"), ("Content-Length", str(len(body)))])
    return [body.encode()]


class PresignedUrlCheck:
    def __init__(self, app: WSGIApp) -> None:
        self._app = app

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        query = environ.get("QUERY_STRING", "")
        if "X-Amz-Signature" not in query:
            return self._app(environ, start_response)
        raw_path = (environ.get("RAW_URI") or environ.get("REQUEST_URI") or environ.get("PATH_INFO", "")).split("?")[0]
        headers = {"host": environ.get("HTTP_HOST", "")}
        headers.update(
            {key[5:].replace("_", "-").lower(): value for key, value in environ.items() if key.startswith("HTTP_")}
        )
        secret = os.environ.get("AWS_SECRET_ACCESS_KEY", "testing")
        expected = expected_signature(environ.get("REQUEST_METHOD", "GET"), raw_path, query, headers, secret)
        given = dict(parse_qsl(query, keep_blank_values=True)).get("X-Amz-Signature", "")
        if expected is None or not hmac.compare_digest(expected, given):
            return _denied(
                start_response, "SignatureDoesNotMatch", "The request signature we calculated does not match"
            )
        if _expired(query, datetime.now(UTC)):
            return _denied(start_response, "AccessDenied", "Request has expired")
        return self._app(environ, start_response)
