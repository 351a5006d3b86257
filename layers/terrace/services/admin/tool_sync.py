"""Refreshing the tool catalog from the release mirrors' indexes (HashiCorp's `<mirror>/terraform/index.json`,
OpenTofu's release API or `<mirror>/api.json`: `tool_releases.index_url`): every released version the catalog
lacks is added as an official, enabled version (`ToolVersionService.sync`). Run by `terrace tools sync`
(`cli_tools.py`) and, on AWS, daily by the `tools_sync` function (`functions/tools_sync/handler.py`). The mirrors
are the operator's settings, never a tenant's; the index reader is the port `adapters/release_index.py`."""

from __future__ import annotations

from collections.abc import Mapping

from terrace.adapters.release_index import IndexReader
from terrace.services.admin import tool_releases
from terrace.services.admin.tool_versions import ToolVersionService


class ToolCatalogSync:
    def __init__(self, tool_versions: ToolVersionService, mirrors: Mapping[str, str], read: IndexReader) -> None:
        self._tool_versions, self._mirrors, self._read = tool_versions, dict(mirrors), read

    def sync(self, read: IndexReader | None = None) -> dict[str, list[str]]:
        """The versions added to each tool's catalog, oldest first; an unreachable mirror or a body that is no
        index raises (nothing of that tool is added; a tool before it keeps what it added)."""
        reader = read or self._read
        added = {}
        for tool, base in self._mirrors.items():
            versions = tool_releases.index_versions(tool, reader(tool_releases.index_url(tool, base)))
            added[tool] = self._tool_versions.sync(tool, versions)
        return added
