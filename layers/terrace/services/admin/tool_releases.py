"""The official terraform and OpenTofu releases a fresh deployment lists before any network access (TFE ships its
list the same way): every one is an enabled catalog record whose `url` is its linux_amd64 archive on the
deployment's release mirror (Settings.tool_mirror_terraform / tool_mirror_opentofu), whose `archs` are the linux
amd64 and arm64 archives, and whose `sha` are those archives' SHA-256 as the vendor's signed SHA256SUMS list them
(`releases/<tool>.sums`; a release whose sums this build did not record has an empty `sha` until `tool_sync.py`
records its vendor-signed sums or an admin sets it).
A runner never trusts a recorded sum, it checks each archive against the vendor's signed SHA256SUMS
(`runner/tool_fetch.py`). `terrace tools sync` adds what was released since; a site admin adds any other version.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

from terrace.domain import tool_versions as tv

DEFAULT_MIRRORS = {
    "terraform": "https://releases.hashicorp.com",
    "opentofu": "https://github.com/opentofu/opentofu/releases/download",
}


def _series(minor: str, last_patch: int) -> list[str]:
    return [f"{minor}.{patch}" for patch in range(last_patch + 1)]


# the releases of each minor series, 1.0.0 onwards (terraform) and 1.6.0 onwards (OpenTofu), as the vendors' release
# tags list them when this list was made (SHIPPED_AT in tool_records.py)
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
    *_series("1.12", 2),
    *_series("1.13", 5),
    *_series("1.14", 9),
    *_series("1.15", 9),
]
OPENTOFU = [
    *_series("1.6", 3),
    *_series("1.7", 10),
    *_series("1.8", 11),
    *_series("1.9", 4),
    *_series("1.10", 10),
    *_series("1.11", 14),
    *_series("1.12", 6),
]
RELEASES = {"terraform": TERRAFORM, "opentofu": OPENTOFU}
SUMS_DIR = Path(__file__).resolve().parent / "releases"


@functools.cache
def shipped_sums(tool: str) -> dict[str, str]:
    """The SHA-256 of each archive name this build records for `tool` (`releases/<tool>.sums`, the vendor's
    SHA256SUMS format), read once per process."""
    path = SUMS_DIR / f"{tool}.sums"
    if not path.is_file():
        return {}
    sums = {}
    for line in path.read_text().splitlines():
        parts = line.split()
        if len(parts) == 2 and not line.startswith("#") and len(parts[0]) == 64:
            sums[parts[1]] = parts[0]
    return sums


def archive_url(tool: str, version: str, base: str, os: str = "linux", arch: str = "amd64") -> str:
    """The release archive's URL in the vendor's layout on the mirror at `base`."""
    base = (base or DEFAULT_MIRRORS[tool]).rstrip("/")
    name = f"{tv.BINARY_NAMES[tool]}_{version}_{os}_{arch}.zip"
    return f"{base}/terraform/{version}/{name}" if tool == "terraform" else f"{base}/v{version}/{name}"


def official_attributes(tool: str, version: str, base: str) -> dict[str, object]:
    """The attributes of the catalog record of an official release (its sums when this build records them)."""
    sums = shipped_sums(tool)
    archs = [
        {
            "url": archive_url(tool, version, base, arch=arch),
            "sha": sums.get(f"{tv.BINARY_NAMES[tool]}_{version}_linux_{arch}.zip", ""),
            "os": "linux",
            "arch": arch,
        }
        for arch in ("amd64", "arm64")
    ]
    return {
        "version": version,
        "url": archs[0]["url"],
        "sha": archs[0]["sha"],
        "official": True,
        "enabled": True,
        "archs": archs,
    }


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
