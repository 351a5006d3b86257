"""`terrace tools sync` and the daily `tools_sync` function on AWS (against a local HTTP mirror) add the released
versions the mirrors' indexes list and the catalog lacks (official and enabled: runs resolve to them at once);
pre-releases and what the catalog has are left alone; an index that is not one is refused."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from types import SimpleNamespace

import httpx
import pytest
from run_helpers import make_run_env
from terrace.bootstrap import build_memory
from terrace.cli_tools import sync
from terrace.config import Settings
from terrace.services.admin import tool_releases

HASHICORP = {"name": "terraform", "versions": {"1.0.3": {}, "1.16.0": {}, "1.16.1-rc1": {}, "0.12.31": {}}}
OPENTOFU = {"versions": [{"id": "1.13.0"}, {"id": "1.9.4"}, {"id": "1.14.0-beta1"}]}


def test_sync_adds_the_released_versions_the_catalog_lacks() -> None:
    env = make_run_env(
        tool_mirror_terraform="https://mirror.internal/hc", tool_mirror_opentofu="https://mirror.internal/tofu"
    )
    asked: list[str] = []

    def read(url: str) -> bytes:
        asked.append(url)
        return json.dumps(HASHICORP if "terraform" in url else OPENTOFU).encode()

    assert sync(env.container, read) == {"terraform": ["0.12.31", "1.16.0"], "opentofu": ["1.13.0"]}
    indexes = [url for url in asked if url.endswith(".json")]
    assert indexes == ["https://mirror.internal/hc/terraform/index.json", "https://mirror.internal/tofu/api.json"]
    assert all("_SHA256SUMS" in url for url in asked if url not in indexes)  # the sums of releases lacking them
    assert sync(env.container, read) == {"terraform": [], "opentofu": []}  # nothing new the second time
    record = env.container.tool_versions.list("terraform", exact="1.16.0")[0]
    assert record.official and record.enabled and record.usable
    assert record.url == "https://mirror.internal/hc/terraform/1.16.0/terraform_1.16.0_linux_amd64.zip"
    body = {"data": {"type": "workspaces", "attributes": {"terraform-version": "~> 1.16.0"}}}
    assert env.api("PATCH", f"/workspaces/{env.workspace_id}", body).status_code == 200
    assert env.create_run(env.upload_config())["attributes"]["terraform-version"] == "1.16.0"


def test_an_index_that_is_not_one_is_refused() -> None:
    with pytest.raises(ValueError, match="not an index of opentofu releases"):
        tool_releases.index_versions("opentofu", json.dumps(HASHICORP).encode())
    assert tool_releases.index_url("opentofu", "") == "https://get.opentofu.org/tofu/api.json"


class _Mirror(http.server.BaseHTTPRequestHandler):
    """A release mirror's two indexes on 127.0.0.1 (HashiCorp's layout under /hc, OpenTofu's under /tofu)."""

    asked: list[str] = []

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        self.asked.append(self.path)
        bodies = {"/hc/terraform/index.json": HASHICORP, "/tofu/api.json": OPENTOFU}
        body = json.dumps(bodies[self.path]).encode() if self.path in bodies else b"{}"
        self.send_response(200 if self.path in bodies else 404)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def mirror() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Mirror)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def test_the_daily_function_syncs_the_catalog_from_the_mirrors_indexes(
    mirror: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`functions/tools_sync/handler.py` (the EventBridge schedule's target) reads both indexes over HTTP through
    the container's sync and adds what the catalog lacks; run again, it adds nothing."""
    from functions.tools_sync import handler

    settings = Settings(table_name="memory", blob_bucket="memory", url_signing_secret="s",
                        tool_mirror_terraform=f"{mirror}/hc", tool_mirror_opentofu=f"{mirror}/tofu")  # fmt: skip
    container = build_memory(settings)
    monkeypatch.setattr(handler, "_get_container", lambda: container)
    context = SimpleNamespace(function_name="tools_sync", memory_limit_in_mb=512, aws_request_id="req-1",
                              invoked_function_arn="arn:aws:lambda:us-east-1:123456789012:function:fn")  # fmt: skip
    _Mirror.asked = []
    assert handler.lambda_handler({}, context) == {"terraform": ["0.12.31", "1.16.0"], "opentofu": ["1.13.0"]}
    assert [path for path in _Mirror.asked if path.endswith(".json")] == ["/hc/terraform/index.json", "/tofu/api.json"]
    assert container.tool_versions.list("opentofu", exact="1.13.0")[0].enabled
    assert handler.lambda_handler({}, context) == {"terraform": [], "opentofu": []}


def test_a_mirror_that_answers_no_index_fails_the_invocation(mirror: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from functions.tools_sync import handler

    settings = Settings(table_name="memory", blob_bucket="memory", url_signing_secret="s",
                        tool_mirror_terraform=f"{mirror}/missing", tool_mirror_opentofu=f"{mirror}/tofu")  # fmt: skip
    container = build_memory(settings)
    monkeypatch.setattr(handler, "_get_container", lambda: container)
    context = SimpleNamespace(function_name="tools_sync", memory_limit_in_mb=512, aws_request_id="req-2",
                              invoked_function_arn="arn:aws:lambda:us-east-1:123456789012:function:fn")  # fmt: skip
    with pytest.raises(httpx.HTTPStatusError):
        handler.lambda_handler({}, context)
    assert container.tool_versions.list("terraform", exact="1.16.0") == []
