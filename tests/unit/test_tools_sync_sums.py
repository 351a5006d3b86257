"""`terrace tools sync` records the SHA-256 sums of the official releases the catalog lists without them (released
after the build, or shipped without their sums), from each release's SHA256SUMS on the mirror, only when its
signature is the vendor's (here the test's key, trusted as the runners trust it); a release signed by another key
or missing from the mirror keeps its empty sums, and a release whose sums shipped is not asked for."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator

import pytest
from release_mirror import ReleaseMirror
from terrace.adapters.httpx_release_index import read_index
from terrace.bootstrap import build_memory
from terrace.config import Settings
from terrace.local import tls
from terrace.services.admin import tool_releases


def _script(version: str) -> bytes:
    return f'#!/bin/sh\necho \'{{"terraform_version": "{version}"}}\'\n'.encode()


@pytest.fixture(scope="module")
def mirror(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReleaseMirror]:
    root = tmp_path_factory.mktemp("sums-mirror")
    served = ReleaseMirror(root / "releases", tls.write_certificates(root / "tls"))
    served.add("terraform", "1.16.0", _script("1.16.0"))  # released after the build
    served.add("terraform", "1.0.3", _script("1.0.3"))  # shipped without its sums
    served.add("terraform", "1.0.4", _script("1.0.4"), stranger=True)  # its sums signed by a key nobody trusts
    served.add("opentofu", "1.9.4", _script("1.9.4"))  # shipped without its sums; OpenTofu's .gpgsig
    (served.root / "terraform" / "terraform" / "index.json").write_text(json.dumps({"versions": {"1.16.0": {}}}))
    (served.root / "opentofu" / "api.json").write_text(json.dumps({"versions": [{"id": "1.9.4"}]}))
    served.start()
    yield served
    served.stop()


def _zip_sum(mirror: ReleaseMirror, tool: str, version: str) -> str:
    folder = f"terraform/terraform/{version}" if tool == "terraform" else f"opentofu/v{version}"
    name = f"{'terraform' if tool == 'terraform' else 'tofu'}_{version}_linux_amd64.zip"
    return hashlib.sha256((mirror.root / folder / name).read_bytes()).hexdigest()


def test_sync_records_the_vendor_signed_sums_of_releases_listed_without_them(mirror: ReleaseMirror) -> None:
    settings = Settings(table_name="memory", blob_bucket="memory", url_signing_secret="s",
                        tool_mirror_terraform=mirror.base("terraform"), tool_mirror_opentofu=mirror.base("opentofu"),
                        tool_trusted_keys=str(mirror.public_key))  # fmt: skip
    container = build_memory(settings)
    ca = str(mirror.tls_files.ca_bundle)
    sync = container.tool_catalog_sync
    assert sync.sync(lambda url: read_index(url, tool_releases.INDEX_MAX, ca)) == {"terraform": ["1.16.0"],
                                                                                  "opentofu": []}  # fmt: skip
    assert sync.summed == {"terraform": ["1.16.0", "1.0.3"], "opentofu": ["1.9.4"]}
    versions = container.tool_versions
    for tool, version in (("terraform", "1.16.0"), ("terraform", "1.0.3"), ("opentofu", "1.9.4")):
        (record,) = versions.list(tool, exact=version)
        assert record.sha == _zip_sum(mirror, tool, version) == record.archs[0]["sha"], (tool, version)
        assert record.archs[1]["arch"] == "arm64" and record.archs[1]["sha"] == ""  # the mirror lists no arm64
    assert versions.list("terraform", exact="1.0.4")[0].sha == ""  # not the vendor's signature: nothing recorded
    shipped = versions.list("terraform", exact="1.9.8")[0]
    assert shipped.sha == tool_releases.shipped_sums("terraform")["terraform_1.9.8_linux_amd64.zip"]
    assert not [path for path in mirror.served if "_1.9.8_" in path]  # its sums shipped: not asked for
    asked = sum(n for path, n in mirror.served.items() if "_1.16.0_" in path)
    sync.sync(lambda url: read_index(url, tool_releases.INDEX_MAX, ca))
    assert sync.summed == {"terraform": [], "opentofu": []}  # the next day: nothing new to record
    assert sum(n for path, n in mirror.served.items() if "_1.16.0_" in path) == asked  # nor asked again
