"""The embedded server's access log (uvicorn's, `terrace serve` and `make dev`) never prints a query string (blob
URLs' signatures, whatever a client appends) nor a log-read URL's signature, which is in its path."""

from __future__ import annotations

import logging
import ssl
from pathlib import Path

import httpx
from terrace.local.stack import LocalStack


def test_paths_lose_their_query_and_log_read_signatures() -> None:
    from terrace.local.access_log import RedactedAccessLog, redact_path

    assert redact_path("/blobs/state/ws-1/sv-1.tfstate?method=PUT&signature=abc") == (
        "/blobs/state/ws-1/sv-1.tfstate?[redacted]"
    )
    assert redact_path("/api/v2/logs/plan-x/1700000000/deadbeef?offset=0") == (
        "/api/v2/logs/plan-x/1700000000/[redacted]?[redacted]"
    )
    assert redact_path("/api/v2/logs/plan-x/1700000000/deadbeef") == "/api/v2/logs/plan-x/1700000000/[redacted]"
    assert redact_path("/api/v2/workspaces/ws-1") == "/api/v2/workspaces/ws-1"
    record = logging.LogRecord(
        "uvicorn.access",
        logging.INFO,
        "",
        0,
        '%s - "%s %s HTTP/%s" %d',
        ("1.2.3.4:5", "GET", "/a?sig=1", "1.1", 200),
        None,
    )
    assert RedactedAccessLog().filter(record) and record.getMessage() == '1.2.3.4:5 - "GET /a?[redacted] HTTP/1.1" 200'


class _Kept(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def test_the_served_access_log_prints_no_signature(tmp_path: Path) -> None:
    data = tmp_path / "data"
    stack = LocalStack(port=0, state_dir=data, data_dir=data, workers=False, access_log=True)
    kept = _Kept()
    info = stack.start()
    access = logging.getLogger("uvicorn.access")
    access.addHandler(kept)
    try:
        blobs = stack.container.blobs
        blobs.put("state/ws-1/sv-1.tfstate", b"{}")
        get_url = blobs.presign_get("state/ws-1/sv-1.tfstate", 60)
        signature = get_url.rsplit("signature=", 1)[1]
        log_path = stack.container.logs.signed_path("plan-abcdefghijklmnop")
        with httpx.Client(verify=ssl.create_default_context(cafile=info.ca_bundle), timeout=30) as client:
            assert client.get(get_url).status_code == 200
            client.get(info.url.rstrip("/") + log_path + "?offset=0&limit=10")
    finally:
        stack.stop()
        access.removeHandler(kept)
    printed = "\n".join(kept.lines)
    assert "/blobs/state/ws-1/sv-1.tfstate" in printed and "/api/v2/logs/plan-abcdefghijklmnop/" in printed
    assert signature not in printed and log_path.rsplit("/", 1)[1] not in printed and "offset=" not in printed
