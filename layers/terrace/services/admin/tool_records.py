"""The records of the terraform and OpenTofu version catalog (`tool_versions.py`): their attributes, the records of
the build (shipped releases and the versions the runners hold: built once per process, read-only, copied where
one is changed) and the API's view of a record.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from terrace.domain import limits
from terrace.domain import tool_versions as tv
from terrace.domain.errors import Invalid
from terrace.domain.tool_versions import ToolVersion
from terrace.services.admin import tool_releases

FLAGS = ("official", "enabled", "beta", "deprecated")


def fetchable(item: Mapping[str, Any]) -> bool:
    """A runner can fetch it: an official release (checked against the vendor's signed sums)."""
    return item.get("tool") in tv.TOOLS and bool(item.get("official")) and tv.is_version(item.get("tool_version", ""))


def usable_item(item: Mapping[str, Any], usable: set[tuple[str, str]], downloads: bool) -> bool:
    return (item["tool"], item["tool_version"]) in usable or (downloads and fetchable(item))


def record(item: Mapping[str, Any], usable: set[tuple[str, str]], downloads: bool = False) -> ToolVersion:
    return ToolVersion(
        id=item["id"],
        tool=item["tool"],
        version=item["tool_version"],
        url=item.get("url", ""),
        sha=item.get("sha", ""),
        official=bool(item.get("official")),
        enabled=bool(item.get("enabled")),
        beta=bool(item.get("beta")),
        deprecated=bool(item.get("deprecated")),
        deprecated_reason=item.get("deprecated_reason") if item.get("deprecated") else None,
        created_at=item["created_at"],
        usable=usable_item(item, usable, downloads),
        archs=[dict(arch) for arch in item.get("archs", [])],  # the caller's own: shipped records are shared
    )


def string(attrs: dict[str, Any], key: str, max_chars: int = limits.TEXT_ATTRIBUTE_MAX) -> str | None:
    value = attrs.get(key)
    return None if value is None else limits.text(value, key, max_chars)


def parse_archs(value: Any) -> list[dict[str, str]]:
    pointer = "/data/attributes/archs"
    if not isinstance(value, list) or len(value) > 8:
        raise Invalid("archs must be a list of {url, sha, os, arch}", pointer=pointer)
    out = []
    for arch in value:
        if not isinstance(arch, dict) or not all(isinstance(arch.get(k), str) for k in ("url", "sha", "os", "arch")):
            raise Invalid("each arch needs url, sha, os and arch strings", pointer=pointer)
        out.append({k: limits.text(arch[k], "archs", limits.TEXT_ATTRIBUTE_MAX) for k in ("url", "sha", "os", "arch")})
    return out


SHIPPED_AT = "2026-12-01T00:00:00.000Z"  # when the shipped list was made (`tool_releases.py`)


def shipped_item(tool: str, version: str, attrs: dict[str, Any]) -> dict[str, Any]:
    """A record of the build (`version` 0: never stored), its id the same in every process."""
    digest = hashlib.sha256(f"{tool}/{version}".encode()).hexdigest()[:16]
    item: dict[str, Any] = {"id": f"tool-{digest}", "tool": tool, "version": 0, "created_at": SHIPPED_AT}
    item.update(beta=False, deprecated=False)
    apply_attributes(item, attrs)
    return item


def frozen(item: dict[str, Any]) -> Mapping[str, Any]:
    """A read-only view of a shipped record, shared by every caller in the process (`thawed` to change it)."""
    shared = tuple(MappingProxyType(dict(arch)) for arch in item.get("archs", []))
    return MappingProxyType({**item, "archs": shared} if "archs" in item else dict(item))


def thawed(item: Mapping[str, Any]) -> dict[str, Any]:
    """A record of one's own to change or store: plain dicts and lists, nothing shared."""
    own = dict(item)
    if "archs" in own:
        own["archs"] = [dict(arch) for arch in own["archs"]]
    return own


@functools.lru_cache(maxsize=64)
def released(tool: str, held: tuple[str, ...], base: str) -> tuple[Mapping[str, Any], ...]:
    """The shipped releases of `tool` and the versions the runners hold, newest first: built once per process for
    a catalog and a mirror (every run's creation resolves its version against them), read-only."""
    versions = tv.ordered({*tool_releases.RELEASES.get(tool, []), *held})
    return tuple(
        frozen(shipped_item(tool, v, tool_releases.official_attributes(tool, v, base))) for v in reversed(versions)
    )


def apply_attributes(item: dict[str, Any], attrs: dict[str, Any]) -> None:
    if attrs.get("version") is not None:
        version = string(attrs, "version", 64) or ""
        tv.parse(version)
        item["tool_version"] = version  # the store lists records by it (`store.py`)
    for key in ("url", "sha"):
        if attrs.get(key) is not None:
            item[key] = string(attrs, key)
    if attrs.get("archs") is None and (attrs.get("url") is not None or attrs.get("sha") is not None):
        # as TFE: a top-level url and sha alone describe one archive, linux/amd64's
        item["archs"] = [{"url": item.get("url", ""), "sha": item.get("sha", ""), "os": "linux", "arch": "amd64"}]
    for key in FLAGS:
        if attrs.get(key) is not None:
            if not isinstance(attrs[key], bool):
                raise Invalid(f"{key} must be true or false", pointer=f"/data/attributes/{key}")
            item[key] = attrs[key]
    if attrs.get("deprecated-reason") is not None:
        item["deprecated_reason"] = string(attrs, "deprecated-reason", limits.DESCRIPTION_MAX)
    if attrs.get("archs") is not None:
        item["archs"] = parse_archs(attrs["archs"])
        amd64 = next((a for a in item["archs"] if (a["os"], a["arch"]) == ("linux", "amd64")), None)
        item["url"], item["sha"] = (amd64["url"], amd64["sha"]) if amd64 else ("", "")  # as TFE
