"""What `make dev` prints once the stack is up names the web UI's address and says the printed token signs in; every
page names the favicon, which is served."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from terrace.local.usage import usage


def test_the_banner_names_the_web_ui_and_the_token_that_signs_in() -> None:
    info: Any = SimpleNamespace(url="https://localhost:8443", organization="dev", ca_bundle="/ca.pem",
                                cli_config="/cli.tfrc", hostname="localhost:8443",
                                registry_hostname="registry.localhost:8443", token="tok-123")  # fmt: skip
    printed = usage(info, "/dev.json")
    assert "Web UI: https://localhost:8443/app  (sign in with the API token printed at the end)" in printed
    assert "API token (admin, site admin; it also signs in to the web UI): tok-123" in printed


def test_every_page_names_its_icon_and_the_icon_is_served() -> None:
    from fastapi.testclient import TestClient
    from terrace.bootstrap import build_memory
    from terrace.web.app import create_app

    client = TestClient(create_app(build_memory()), base_url="https://testserver")
    assert '<link rel="icon" href="/static/favicon.svg" type="image/svg+xml">' in client.get("/app/sign-in").text
    icon = client.get("/static/favicon.svg")
    assert icon.status_code == 200 and icon.headers["content-type"].startswith("image/svg+xml")
