"""The settings of a local stack (`stack.py`) on each backend: embedded (SQLite and files in the data folder, its
URL-signing secret a file there) or moto (a fresh AWS twin started here, its resources created in it), with what
both share: the tool versions the local runners hold, TFC's rate limit, then the caller's own overrides."""

from __future__ import annotations

import logging
import os
import secrets
from pathlib import Path
from typing import Any

from terrace.config import API_RATE_LIMIT_PER_S, Settings
from terrace.local import embedded, moto_twin
from terrace.wiring.local_resources import LOCAL_REGION, LocalResources, create_resources

DUMMY_AWS_ENV = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": LOCAL_REGION}


def shared(state_dir: Path, link_host_tools: bool, overrides: dict[str, Any]) -> dict[str, Any]:
    """Settings both backends share: the tool versions the local runners hold (the host's terraform and OpenTofu
    linked into their catalog, unless `link_host_tools` is off), TFC's rate limit, then `overrides`."""
    from terrace.local import tool_catalog
    from terrace.runner import catalog as runner_catalog

    tools_dir = state_dir / "tools"
    tools = tool_catalog.build(tools_dir) if link_host_tools else runner_catalog.scan(tools_dir)
    return {
        "tool_catalog": runner_catalog.describe(tools),
        "api_rate_limit_per_s": API_RATE_LIMIT_PER_S,
        **overrides,
    }


def of_embedded(public_url: str, data_dir: Path, state_dir: Path, fields: dict[str, Any]) -> Settings:
    """The embedded stack's settings: its data folder made private (passable when it is the state folder)."""
    data_dir.mkdir(parents=True, exist_ok=True)
    data_dir.chmod(0o700 if data_dir != state_dir else 0o711)
    return Settings(
        table_name="embedded",
        blob_bucket="embedded",
        data_dir=str(data_dir),
        public_url=public_url,
        url_signing_secret=embedded.url_signing_secret(data_dir),
        **fields,
    )


def on_moto(public_url: str, prefix: str, fields: dict[str, Any]) -> tuple[Any, LocalResources, Settings]:
    """Start the moto server and create the resources in it: (the server, to stop, its resources, the settings of
    a stack on them)."""
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # moto's per-request lines drown the API's
    server = moto_twin.moto_server("127.0.0.1", 0)  # S3's URL checks, DynamoDB serialized
    server.start()
    host, moto_port = server.get_host_and_port()
    endpoint = f"http://{host}:{moto_port}"
    resources = create_resources(endpoint, prefix)
    settings = Settings(
        **resources.settings_fields(),
        public_url=public_url,
        region=LOCAL_REGION,
        aws_endpoint_url=endpoint,
        url_signing_secret=os.environ.get("TERRACE_URL_SIGNING_SECRET") or secrets.token_urlsafe(32),
        **fields,
    )
    return server, resources, settings
