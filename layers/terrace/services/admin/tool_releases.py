"""The official terraform and OpenTofu releases a fresh deployment lists before any network access (TFE ships its
list the same way): every one is an enabled catalog record whose `url` is its linux_amd64 archive on the
deployment's release mirror (Settings.tool_mirror_terraform / tool_mirror_opentofu) and whose `archs` are the
linux amd64 and arm64 archives. `sha` is empty here: this build had no access to the vendors' release indexes to
record their sums, and a runner never trusts a recorded sum anyway, it checks each archive against the vendor's
signed SHA256SUMS (`runner/tool_fetch.py`). A site admin adds any other version through the admin API.
"""

from __future__ import annotations

import json
from typing import Any

from terrace.domain import tool_versions as tv

DEFAULT_MIRRORS = {
    "terraform": "https://releases.hashicorp.com",
    "opentofu": "https://github.com/opentofu/opentofu/releases/download",
}


def _series(minor: str, last_patch: int) -> list[str]:
    return [f"{minor}.{patch}" for patch in range(last_patch + 1)]


# the releases of each minor series, 1.0.0 onwards (terraform) and 1.6.0 onwards (OpenTofu), as known at build time
TERRAFORM = [
    *_series("1.0", 11),
    *_series("1.1", 9),
    *_series("1.2", 9),
    *_series("1.3", 10),
    *_series("1.4", 7),
    *_series("1.5", 7),
    *_series("1.6", 6),
    *_series("1.7", 5),
    *_series("1.8", 5),
    *_series("1.9", 8),
    *_series("1.10", 5),
    *_series("1.11", 4),
]
OPENTOFU = [*_series("1.6", 2), *_series("1.7", 3), *_series("1.8", 8), *_series("1.9", 4)]
RELEASES = {"terraform": TERRAFORM, "opentofu": OPENTOFU}


def archive_url(tool: str, version: str, base: str, os: str = "linux", arch: str = "amd64") -> str:
    """The release archive's URL in the vendor's layout on the mirror at `base`."""
    base = (base or DEFAULT_MIRRORS[tool]).rstrip("/")
    name = f"{tv.BINARY_NAMES[tool]}_{version}_{os}_{arch}.zip"
    return f"{base}/terraform/{version}/{name}" if tool == "terraform" else f"{base}/v{version}/{name}"


def official_attributes(tool: str, version: str, base: str) -> dict[str, object]:
    """The attributes of the catalog record of an official release."""
    archs = [
        {"url": archive_url(tool, version, base, arch=arch), "sha": "", "os": "linux", "arch": arch}
        for arch in ("amd64", "arm64")
    ]
    return {"version": version, "url": archs[0]["url"], "sha": "", "official": True, "enabled": True, "archs": archs}


INDEX_MAX = 64 * 1024 * 1024  # HashiCorp's terraform index.json lists every build of every release


def index_url(tool: str, base: str) -> str:
    """Where the mirror lists its releases: HashiCorp's `<base>/terraform/index.json`; OpenTofu's release API
    (`https://get.opentofu.org/tofu/api.json`), or `<base>/api.json` on a mirror of one's own."""
    if tool == "terraform":
        return f"{(base or DEFAULT_MIRRORS[tool]).rstrip('/')}/terraform/index.json"
    return f"{base.rstrip('/')}/api.json" if base else "https://get.opentofu.org/tofu/api.json"


def index_versions(tool: str, body: bytes) -> list[str]:
    """The versions an index lists (HashiCorp's `{"versions": {"1.5.7": ...}}`, OpenTofu's
    `{"versions": [{"id": "1.9.0"}, ...]}`); ValueError when it is neither."""
    data: Any = json.loads(body)
    listed = data.get("versions") if isinstance(data, dict) else None
    if tool == "terraform" and isinstance(listed, dict):
        return [v for v in listed if isinstance(v, str) and tv.is_version(v)]
    if tool == "opentofu" and isinstance(listed, list):
        ids = [str(e.get("id", "")).removeprefix("v") for e in listed if isinstance(e, dict)]
        return [v for v in ids if tv.is_version(v)]
    raise ValueError(f"not an index of {tool} releases")
