"""`terrace tools sync` adds the released versions the mirrors' indexes list and the catalog lacks (official and
enabled: runs resolve to them at once); pre-releases and what the catalog has are left alone; an index that is not
one is refused."""

from __future__ import annotations

import json

import pytest
from run_helpers import make_run_env
from terrace.cli_tools import sync
from terrace.services.admin import tool_releases

HASHICORP = {"name": "terraform", "versions": {"1.0.3": {}, "1.12.0": {}, "1.12.1-rc1": {}, "0.12.31": {}}}
OPENTOFU = {"versions": [{"id": "1.10.2"}, {"id": "1.9.4"}, {"id": "1.11.0-beta1"}]}


def test_sync_adds_the_released_versions_the_catalog_lacks() -> None:
    env = make_run_env(
        tool_mirror_terraform="https://mirror.internal/hc", tool_mirror_opentofu="https://mirror.internal/tofu"
    )
    asked: list[str] = []

    def read(url: str) -> bytes:
        asked.append(url)
        return json.dumps(HASHICORP if "terraform" in url else OPENTOFU).encode()

    assert sync(env.container, read) == {"terraform": ["0.12.31", "1.12.0"], "opentofu": ["1.10.2"]}
    assert asked == ["https://mirror.internal/hc/terraform/index.json", "https://mirror.internal/tofu/api.json"]
    assert sync(env.container, read) == {"terraform": [], "opentofu": []}  # nothing new the second time
    record = env.container.tool_versions.list("terraform", exact="1.12.0")[0]
    assert record.official and record.enabled and record.usable
    assert record.url == "https://mirror.internal/hc/terraform/1.12.0/terraform_1.12.0_linux_amd64.zip"
    body = {"data": {"type": "workspaces", "attributes": {"terraform-version": "~> 1.12.0"}}}
    assert env.api("PATCH", f"/workspaces/{env.workspace_id}", body).status_code == 200
    assert env.create_run(env.upload_config())["attributes"]["terraform-version"] == "1.12.0"


def test_an_index_that_is_not_one_is_refused() -> None:
    with pytest.raises(ValueError, match="not an index of opentofu releases"):
        tool_releases.index_versions("opentofu", json.dumps(HASHICORP).encode())
    assert tool_releases.index_url("opentofu", "") == "https://get.opentofu.org/tofu/api.json"
