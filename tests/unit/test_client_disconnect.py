"""A client that disconnects while its request body is read (found by the proof's 200-client state load: clients
give up and close mid-upload) is neither a 500 nor an error in the log: nothing was done, and no one reads the
answer."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest
from state_helpers import make_env
from terrace.web.app import create_app


def _post_then_disconnect(app: Any, path: str, token: str) -> list[dict[str, Any]]:
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "https",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [
            (b"host", b"testserver"),
            (b"authorization", f"Bearer {token}".encode()),
            (b"content-type", b"application/vnd.api+json"),
            (b"content-length", b"4096"),
        ],
        "client": ("127.0.0.1", 50000),
        "server": ("testserver", 443),
    }
    messages = [{"type": "http.request", "body": b'{"data": {"type"', "more_body": True}, {"type": "http.disconnect"}]
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return messages.pop(0) if messages else {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    asyncio.run(app(scope, receive, send))
    return sent


def test_a_client_gone_mid_body_is_not_a_500(caplog: pytest.LogCaptureFixture) -> None:
    env = make_env()
    app = create_app(env.container)
    with caplog.at_level(logging.INFO):
        sent = _post_then_disconnect(app, f"/api/v2/organizations/{env.org}/workspaces", env.token)
    start = next(message for message in sent if message["type"] == "http.response.start")
    assert start["status"] == 400
    assert not [record for record in caplog.records if record.levelno >= logging.ERROR], caplog.text
    assert "client disconnected" in caplog.text
