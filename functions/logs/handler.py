"""Lambda "logs": the CLI's log reads, behind the function's own URL (auth NONE), not CloudFront and the HTTP API.

A log-read URL is a capability (`services/runs/logs.py`: the phase, an expiry and an HMAC signature in its path), so
a read needs no token lookup, authorizer or origin check: only the signature. terraform and tofu (go-tfe's
LogReader) follow the absolute `log-read-url` a plan or apply names (`TERRACE_LOG_READ_URL` on the api function,
`web/run_documents.py`), replacing its query with `limit` and `offset`, and poll it while the phase streams. Each
read here is one Lambda request and nothing else: a read through CloudFront and the HTTP API paid both per request
as well (`python -m bench.cost`: about a third of the CLI's requests of a run).

This function answers `GET /api/v2/logs/<phase>/<expires>/<signature>` and nothing else: any other path or method is
refused before the container is built; the signature is checked (`LogService.read_signed`) before the run or a
chunk is read. It answers at once with what there is (`TERRACE_LOG_READ_WAIT_S=0`: a function is never held
waiting); its role may read the table, the log archives and the keys that unmask nothing but what the log's reader
may see, and write nothing (`infra/log_reads.py`). It logs no request: the path is the capability. An invocation of
the function (not its URL) with `WARM_UP` only builds the container: the scaler's, as it takes an organization's
warm window's wake (`warm_window.py: take_wakes`).
"""

from __future__ import annotations

import base64
import json
import re
from typing import Any

from terrace.bootstrap import aws_container
from terrace.domain.errors import BadRequest, NotFound
from terrace.services.runs.logs import read_window

_get_container = aws_container  # built once per execution environment, on the first well-formed read
# the scaler's invocation as an organization's warm window opens (`wiring/aws_adapters.py: warm_up`): the container is
# built then, so the CLI's first log read of the run that follows finds an environment ready (~1.2 s sooner)
WARM_UP = {"warm-up": True}
# a phase id, its expiry (epoch seconds) and its signature (base64url): the shapes `LogService.signed_path` mints
LOG_PATH = re.compile(
    r"^/api/v2/logs/(?P<phase>(?:plan|apply)-[A-Za-z0-9]{1,64})/(?P<expires>[0-9]{1,12})/(?P<sig>[A-Za-z0-9_-]{1,128})$"
)


def _error(status: int, title: str, detail: str, headers: dict[str, str] | None = None) -> dict[str, Any]:
    document = {"errors": [{"status": str(status), "title": title, "detail": detail}]}
    return {
        "statusCode": status,
        "headers": {"content-type": "application/vnd.api+json", "cache-control": "no-store", **(headers or {})},
        "body": json.dumps(document),
        "isBase64Encoded": False,
    }


def _query(event: dict[str, Any]) -> dict[str, str]:
    params = event.get("queryStringParameters") or {}
    return {str(k): str(v) for k, v in params.items()} if isinstance(params, dict) else {}


def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    if event == WARM_UP:  # an invocation (IAM: the api's role), never a URL request, which always has a path
        _get_container()
        return {"warmed": True}
    http = (event.get("requestContext") or {}).get("http") or {}
    path = str(event.get("rawPath") or http.get("path") or "")
    match = LOG_PATH.match(path)
    if match is None:
        return _error(404, "not found", "no such resource: this address serves log-read URLs only")
    if str(http.get("method", "GET")).upper() != "GET":
        return _error(405, "method not allowed", "a log-read URL is read with GET", {"allow": "GET"})
    query = _query(event)
    try:
        offset, limit = read_window(query.get("offset"), query.get("limit"))
        data = _get_container().logs.read_signed(match["phase"], int(match["expires"]), match["sig"], offset, limit)
    except BadRequest as exc:
        return _error(400, "bad request", str(exc))
    except NotFound as exc:
        return _error(404, "not found", str(exc))
    return {
        "statusCode": 200,
        "headers": {"content-type": "text/plain", "cache-control": "no-store"},
        "body": base64.b64encode(data).decode("ascii"),
        "isBase64Encoded": True,
    }
