"""The deployment's terraform and OpenTofu versions (TFE's admin terraform-versions, and the OpenTofu twin).

A record per tool and version. The official releases Terrace ships (`tool_releases.py`, their URLs on the configured
release mirror), the versions the runners hold (`Settings.tool_catalog`) and the policy engine built in (`builds`:
the OPA engine's own version) are records of the build, official and enabled, listed without being stored (reads
never write); each has an id derived from its tool and version. A site admin may add records and change or delete
any: a changed shipped record is stored from then on, a deleted one leaves a tombstone (`deleted`) that hides it.
When runners fetch what they lack (`Settings.tool_downloads`, on by default) a run resolves its workspace's
terraform-version among the enabled records (`usable`); without, among the enabled versions the runners hold only.
"""

from __future__ import annotations

import builtins
import time
from collections.abc import Callable, Mapping
from typing import Any

from terrace.domain import clock
from terrace.domain import tool_versions as tv
from terrace.domain.errors import Conflict, Invalid, NotFound
from terrace.domain.ids import new_id
from terrace.domain.tool_versions import ToolVersion
from terrace.services.admin import tool_releases
from terrace.services.admin.store import ToolVersionStore
from terrace.services.admin.tool_records import (
    apply_attributes,
    record,
    released,
    shipped_item,
    string,
    thawed,
    usable_item,
)

USABLE_TTL_S = 10.0  # how long a process resolves runs against the usable versions it read


class ToolVersionService:
    def __init__(
        self,
        store: ToolVersionStore,
        catalog: dict[str, list[str]],
        default_tool: str = "terraform",
        *,
        downloads: bool = False,
        mirrors: dict[str, str] | None = None,
        builds: Mapping[str, Callable[[], dict[str, Any] | None]] | None = None,
    ) -> None:
        """`builds`: for a tool the deployment runs built in (the OPA policy engine), its record's attributes."""
        self._store = store
        self._default_tool = default_tool
        self._downloads = downloads  # runners fetch an official release they lack (runner/tool_fetch.py)
        self._mirrors = mirrors or {}
        self._builds = dict(builds or {})
        self._catalog = {tool: tv.ordered(versions) for tool, versions in catalog.items()}
        self._usable_cache: dict[str, tuple[float, builtins.list[str]]] = {}
        self._tool_for_cache: dict[str, tuple[float, str]] = {}

    @property
    def default_tool(self) -> str:
        return self._default_tool

    def catalog(self, tool: str) -> list[str]:
        """Versions of `tool` the runners hold, oldest first."""
        return list(self._catalog.get(tool, []))

    def _usable(self) -> set[tuple[str, str]]:
        return {(tool, v) for tool, versions in self._catalog.items() for v in versions}

    def _shipped(self, tool: str) -> builtins.list[Mapping[str, Any]]:
        """The records of the build: the shipped releases and the held versions, newest first, not stored
        (read-only: `_item` hands out a copy of one's own)."""
        built = self._builds[tool]() if tool in self._builds else None
        if built:
            return [shipped_item(tool, str(built["version"]), built)]
        return list(released(tool, tuple(self._catalog.get(tool, ())), self._mirrors.get(tool, "")))

    def _items(self, tool: str) -> builtins.list[Mapping[str, Any]]:
        """Every record of `tool`: the stored ones (tombstones too) and the shipped ones none of them replaces,
        newest first."""
        stored = self._store.list(tool)
        if not stored:
            return self._shipped(tool)  # already newest first
        have = {item["tool_version"] for item in stored}
        merged = [*stored, *(item for item in self._shipped(tool) if item["tool_version"] not in have)]
        return sorted(merged, key=lambda item: tv.sort_key(item["tool_version"]), reverse=True)

    def sync(self, tool: str, versions: builtins.list[str]) -> builtins.list[str]:
        """Official, enabled records for the released `versions` of `tool` the catalog lacks (what the mirror's
        index lists: `terrace tools sync`); the versions added, oldest first. Records an admin changed or deleted
        are left as they are, except that a deleted one comes back."""
        items = {item["tool_version"]: item for item in self._items(tool)}
        added = []
        for version in tv.ordered(v for v in versions if tv.is_version(v) and tv.parse(v)[3] == 1):
            if version in items and items[version].get("deleted"):
                self._store.delete(items[version])  # the tombstone: a shipped one is listed again
                items.pop(version)
                if version in {item["tool_version"] for item in self._shipped(tool)}:
                    added.append(version)
                    continue
            if version not in items:
                try:
                    self.create(tool, tool_releases.official_attributes(tool, version, self._mirrors.get(tool, "")))
                    added.append(version)
                except Conflict:
                    pass  # added meanwhile
        return added

    def list(self, tool: str, *, exact: str = "", search: str = "") -> list[ToolVersion]:
        usable = self._usable()
        items = [record(i, usable, self._downloads) for i in self._items(tool) if not i.get("deleted")]
        return [r for r in items if (not exact or r.version == exact) and (not search or search in r.version)]

    def get(self, tool: str, record_id: str) -> ToolVersion:
        return record(self._item(tool, record_id), self._usable(), self._downloads)

    def usable_versions(self, tool: str) -> builtins.list[str]:
        """Versions a run may use, oldest first: enabled, and held by the runners or (with downloads) fetchable.
        Read at most every USABLE_TTL_S per process (a run's creation and its jobs' claims ask), at once after
        this process changed a record; the admin API always reads the records."""
        if not self._downloads and not self.catalog(tool):
            return []  # the runners hold none and fetch none: no record to read
        now = time.monotonic()
        read_at, versions = self._usable_cache.get(tool, (-USABLE_TTL_S, []))
        if now - read_at >= USABLE_TTL_S:
            usable = self._usable()
            versions = tv.ordered(
                item["tool_version"]
                for item in self._items(tool)
                if not item.get("deleted") and item.get("enabled") and usable_item(item, usable, self._downloads)
            )
            self._usable_cache[tool] = (now, versions)
        return list(versions)

    def tool_of(self, version: str) -> str:
        """The tool a run resolved to `version` uses (the default tool first, as `resolve` chose); "" if none."""
        if not tv.is_version(version):
            return ""
        tools = sorted(tv.TOOLS, key=lambda tool: tool != self._default_tool)
        for tool in tools:
            if version in self.usable_versions(tool):
                return tool
        for tool in tools:  # disabled since the run resolved to it: its apply still uses the plan's binary
            if any(r.usable for r in self.list(tool, exact=version)):
                return tool
        return ""

    def _held(self) -> dict[str, builtins.list[str]]:
        return {tool: self.usable_versions(tool) for tool in tv.TOOLS}

    def _order(self, tool: str) -> builtins.list[str]:
        """The tools a run of a workspace of `tool` may use: that one only; for "" (a workspace stored before
        workspaces had a tool) the default tool first, then the other, as its runs always resolved."""
        return [tool] if tool in tv.TOOLS else sorted(tv.TOOLS, key=lambda t: t != self._default_tool)

    def resolve(self, requested: str, tool: str = "") -> tuple[str, str, str | None]:
        """(the newest usable version of `tool` satisfying `requested`, its tool, None), or (`requested`, `tool`,
        why no runner can run it). A deployment that does not say what its runners hold leaves `requested` to
        the runner (of `tool` when named)."""
        held: dict[str, builtins.list[str]] = {}
        for candidate in self._order(tool):  # the other tool read if needed
            held[candidate] = self.usable_versions(candidate)
            try:
                found = tv.newest(requested, held[candidate]) if held[candidate] else None
            except Invalid:
                return requested, tool, None  # not a constraint at all: the runner reports it
            if found:
                return found, candidate, None
        if not any(held.values()) and not (tool and self._any_held()):
            return requested, tool, None
        listed = ", ".join(entry for t in held for entry in _series(t, held[t])) or "none"
        if tool:
            product = tv.PRODUCTS[tool]
            why = f"no runner has a version of {product} satisfying {requested!r} (the workspace's iac-platform"
            return requested, tool, f"{why} is {tool}); {product} versions available: {listed}"
        return requested, "", f"no runner has a terraform version satisfying {requested!r}; available: {listed}"

    def _any_held(self) -> bool:
        return any(self._held().values())

    def tool_for(self, requested: str) -> str:
        """The tool the runs of a workspace without one (stored before workspaces had a tool) resolve
        `requested` to: the default tool unless only the other has a version satisfying it. Remembered for
        USABLE_TTL_S per process (a list of such workspaces asks once per terraform-version, not per workspace)."""
        now = time.monotonic()
        known = self._tool_for_cache.get(requested)
        if known is None or now - known[0] >= USABLE_TTL_S:
            if len(self._tool_for_cache) >= 1024:
                self._tool_for_cache.clear()
            known = (now, self.resolve(requested)[1] or self._default_tool)
            self._tool_for_cache[requested] = known
        return known[1]

    def settle(self, requested: Any, tool: str = "") -> Any:
        """The terraform-version to store for a workspace of `tool` ("": any): a client newer than every runner
        (terraform 1.12 creating a workspace through its `cloud` block on a deployment holding 1.11) gets the
        newest version held of its major version instead of a pin no runner can run; anything else is kept."""
        if not isinstance(requested, str) or not tv.is_version(requested):
            return requested
        held = self._held()
        versions = [v for t in self._order(tool) for v in held[t]]
        asked = tv.parse(requested)
        if not versions or requested.removeprefix("v") in versions or asked <= max(tv.parse(v) for v in versions):
            return requested
        return tv.newest(f"~> {asked[0]}.0", versions) or requested

    def create(self, tool: str, attrs: dict[str, Any]) -> ToolVersion:
        version = string(attrs, "version", 64)
        if not version:
            raise Invalid("version is required", pointer="/data/attributes/version")
        tv.parse(version)
        existing = next((i for i in self._items(tool) if i["tool_version"] == version.removeprefix("v")), None)
        if existing is not None and not existing.get("deleted"):
            raise Conflict(f"{tool} version {version} already exists", meta={"pointer": "/data/attributes/version"})
        if existing is not None and existing.get("version"):
            self._store.delete(existing)  # a tombstone: the version is free again
        record_id = new_id("tool")
        item: dict[str, Any] = {"id": record_id, "tool": tool, "version": 1}
        item.update(created_at=clock.now_iso(), official=False, enabled=True, beta=False, deprecated=False)
        self.apply_attributes(item, {**attrs, "version": version})
        self._usable_cache.pop(tool, None)
        self._tool_for_cache.clear()
        if not self._store.create(item):
            raise Conflict(f"{tool} version {version} already exists", meta={"pointer": "/data/attributes/version"})
        return record(item, self._usable(), self._downloads)

    def update(self, tool: str, record_id: str, attrs: dict[str, Any]) -> ToolVersion:
        item = self._item(tool, record_id)
        old = item["tool_version"]
        self.apply_attributes(item, attrs)
        expected = item["version"]
        item["version"] = expected + 1
        self._usable_cache.pop(tool, None)
        self._tool_for_cache.clear()
        stored = self._store.create(item) if expected == 0 else self._store.replace(item, expected, old)
        if not stored:  # a shipped record is stored from its first change on
            raise Conflict(f"{tool} version {item['tool_version']} already exists or the record changed")
        return record(item, self._usable(), self._downloads)

    def delete(self, tool: str, record_id: str) -> None:
        item = self._item(tool, record_id)
        self._usable_cache.pop(tool, None)
        self._tool_for_cache.clear()
        shipped = {i["tool_version"] for i in self._shipped(tool)}
        if item["tool_version"] not in shipped:
            self._store.delete(item)
            return
        tombstone = {**item, "deleted": True, "version": item["version"] + 1}  # hides the shipped record
        stored = (
            self._store.create(tombstone)
            if item["version"] == 0
            else self._store.replace(tombstone, item["version"], item["tool_version"])
        )
        if not stored:
            raise Conflict(f"{tool} version {item['tool_version']} changed meanwhile")

    def _item(self, tool: str, record_id: str) -> dict[str, Any]:
        item = self._store.find(record_id)
        if item is None:
            shipped = next((i for i in self._items(tool) if i["id"] == record_id), None)
            item = None if shipped is None else thawed(shipped)
        if item is None or item["tool"] != tool or item.get("deleted"):
            raise NotFound(f"{tool} version {record_id} not found")
        return item

    apply_attributes = staticmethod(apply_attributes)


def _series(tool: str, versions: builtins.list[str]) -> builtins.list[str]:
    """`versions` (oldest first) as a run's error names them: each unbroken run of patch releases of one minor
    version as its ends (`Terraform 1.0.0 to 1.0.11`: the whole catalog in a few hundred characters, not 3 KB)."""
    product = tv.PRODUCTS[tool]
    runs: builtins.list[builtins.list[str]] = []
    for version in versions:
        key = tv.parse(version)
        last = tv.parse(runs[-1][-1]) if runs else None
        follows = last is not None and key[3] == last[3] == 1 and key[:2] == last[:2] and key[2] == last[2] + 1
        if follows:
            runs[-1].append(version)
        else:
            runs.append([version])
    return [f"{product} {run[0]}" + (f" to {run[-1]}" if len(run) > 1 else "") for run in runs]
