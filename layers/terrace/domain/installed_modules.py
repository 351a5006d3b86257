"""The module versions a plan's `terraform init` installed, as its runner reports them (`FinishRequest.
installed_modules`): what ran, where the configuration only gives a constraint.

The runner reads `.terraform/modules/modules.json` in the job's folder right after init (`runner/
installed_modules.py`), a file the run's own code may have written: `from_manifest` keeps, of a JSON document
within `MANIFEST_MAX_BYTES`, only the entries with a version (a registry module's), each of the shape the server
accepts, root module calls first, at most `MAX_INSTALLED` and `TEXT_BUDGET` characters in all. The server
validates the same limits (`InstalledModule`, `check_budget`) and refuses a report past them; the explorer feed
(`services/workflows/explorer_feed.py`) takes a root call's version from it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

MANIFEST_MAX_BYTES = 4 * 1024 * 1024  # a larger modules.json is not read
MAX_INSTALLED = 200  # entries in one report (the explorer keeps as many module uses per workspace)
KEY_MAX = 256  # a call's path, `network` or `network.subnets`
SOURCE_MAX = 512
VERSION_MAX = 64
TEXT_BUDGET = 32 * 1024  # the characters of one report's entries together (the run item stays small)
KEY_PATTERN = r"^[A-Za-z0-9_-]{1,64}(\.[A-Za-z0-9_-]{1,64})*$"
VERSION_PATTERN = r"^[0-9A-Za-z.+-]+$"
SOURCE_PATTERN = r"^[\x21-\x7e]+$"  # printable ASCII without a space: an address or URL as `init` normalized it


class InstalledModule(BaseModel):
    """One module call `init` installed: its key (`network`, a nested call `network.subnets`), its source as
    modules.json records it and its exact version."""

    model_config = ConfigDict(extra="forbid", strict=True)

    key: str = Field(max_length=KEY_MAX, pattern=KEY_PATTERN)
    source: str = Field(max_length=SOURCE_MAX, pattern=SOURCE_PATTERN)
    version: str = Field(max_length=VERSION_MAX, pattern=VERSION_PATTERN)

    @property
    def size(self) -> int:
        return len(self.key) + len(self.source) + len(self.version)


def check_budget(modules: list[InstalledModule] | None) -> list[InstalledModule] | None:
    """`modules` when their text fits `TEXT_BUDGET`; else ValueError (a request validator's refusal)."""
    if modules is not None and sum(m.size for m in modules) > TEXT_BUDGET:
        raise ValueError(f"installed modules hold more than {TEXT_BUDGET} characters")
    return modules


def from_manifest(raw: bytes) -> list[InstalledModule]:
    """The entries of a modules.json the server accepts, root calls first, within every limit; [] when the
    document is too large, not JSON or not of modules.json's shape. Never raises on what the job wrote."""
    if len(raw) > MANIFEST_MAX_BYTES:
        return []
    try:
        document = json.loads(raw)
    except (ValueError, RecursionError):  # not UTF-8 JSON, or nested past the parser's depth
        return []
    listed = document.get("Modules") if isinstance(document, dict) else None
    found = list(_accepted(listed if isinstance(listed, list) else []))
    found.sort(key=lambda m: (m.key.count("."), m.key))
    kept: list[InstalledModule] = []
    used = 0
    for module in found[:MAX_INSTALLED]:
        if used + module.size > TEXT_BUDGET:
            break
        kept.append(module)
        used += module.size
    return kept


def _accepted(entries: Iterable[Any]) -> Iterable[InstalledModule]:
    seen: set[str] = set()
    for entry in entries:
        if not isinstance(entry, dict):
            continue
        key, source, version = entry.get("Key"), entry.get("Source"), entry.get("Version")
        if not (isinstance(key, str) and isinstance(source, str) and isinstance(version, str)) or key in seen:
            continue
        try:
            module = InstalledModule(key=key, source=source, version=version)
        except ValueError:  # the root module (no key), a local module (no version), or past a limit
            continue
        seen.add(key)
        yield module


def root_versions(modules: Iterable[dict[str, Any]] | None) -> dict[str, str]:
    """Root module call -> its installed version, of a run's stored report (`Run.installed_modules`)."""
    found: dict[str, str] = {}
    for entry in modules or ():
        key, version = entry.get("key"), entry.get("version")
        if isinstance(key, str) and key and "." not in key and isinstance(version, str) and version:
            found[key] = version[:VERSION_MAX]
    return found
