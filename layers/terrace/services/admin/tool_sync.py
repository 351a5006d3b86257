"""Refreshing the tool catalog from the release mirrors (HashiCorp's `<mirror>/terraform/index.json`, OpenTofu's
release API or `<mirror>/api.json`: `tool_releases.index_url`): every released version the catalog lacks is added as
an official, enabled version (`ToolVersionService.sync`), and an official version whose linux archives have no
recorded SHA-256 (released after the build, or shipped without its sums) gets the sums its vendor signed: the
release's SHA256SUMS is read from the mirror and recorded only when its signature is the vendor's (`SumsCheck`, the
runner's check with the same keys). Run by `terrace tools sync` (`cli_tools.py`) and, on AWS, daily by the
`tools_sync` function (`functions/tools_sync/handler.py`). The mirrors are the operator's settings, never a
tenant's; the reader is the port `adapters/release_index.py`."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping

from terrace.adapters.release_index import IndexReader
from terrace.domain import tool_versions as tv
from terrace.domain.tool_versions import ToolVersion
from terrace.services.admin import tool_releases
from terrace.services.admin.tool_versions import ToolVersionService

log = logging.getLogger(__name__)

SumsCheck = Callable[[str, bytes, bytes], None]  # (tool, SHA256SUMS, signature): raises unless its vendor signed it
SUMS_PER_SYNC = 20  # releases of a tool whose sums one sync reads (the rest, or a mirror lacking some: the next day)


class ToolCatalogSync:
    def __init__(
        self,
        tool_versions: ToolVersionService,
        mirrors: Mapping[str, str],
        read: IndexReader,
        check: SumsCheck | None = None,
    ) -> None:
        self._tool_versions, self._mirrors, self._read = tool_versions, dict(mirrors), read
        self._check = check
        self.summed: dict[str, list[str]] = {}  # the versions the last sync recorded sums for, by tool

    def sync(self, read: IndexReader | None = None) -> dict[str, list[str]]:
        """The versions added to each tool's catalog, oldest first; an unreachable mirror or a body that is no
        index raises (nothing of that tool is added; a tool before it keeps what it added). A release whose signed
        sums cannot be read or checked keeps its empty sums (logged), the others theirs."""
        reader = read or self._read
        added = {}
        for tool, base in self._mirrors.items():
            versions = tool_releases.index_versions(tool, reader(tool_releases.index_url(tool, base)))
            added[tool] = self._tool_versions.sync(tool, versions)
            if self._check is not None:
                self.summed[tool] = self._record_sums(tool, base, reader, self._check)
        return added

    def _record_sums(self, tool: str, base: str, reader: IndexReader, check: SumsCheck) -> list[str]:
        # without the top-level sum (linux amd64's, as TFE): a mirror listing some archive only is not asked daily
        lacking = [r for r in self._tool_versions.list(tool) if r.official and not r.sha and r.archs]
        summed = []
        for record in lacking[:SUMS_PER_SYNC]:
            try:
                listed = self._signed_sums(tool, base, record, reader, check)
            except Exception as exc:  # unreachable, absent, not signed by the vendor: left as it is
                log.warning("no signed sums recorded for %s %s: %s", tool, record.version, exc)
                continue
            archs = [{**a, "sha": a["sha"] or listed.get(a["url"].rsplit("/", 1)[-1], "")} for a in record.archs]
            if archs != record.archs:
                self._tool_versions.update(tool, record.id, {"archs": archs})
                summed.append(record.version)
        return summed

    @staticmethod
    def _signed_sums(tool: str, base: str, record: ToolVersion, reader: IndexReader, check: SumsCheck) -> dict:
        folder = tool_releases.archive_url(tool, record.version, base).rsplit("/", 1)[0]
        name = f"{folder}/{tv.BINARY_NAMES[tool]}_{record.version}_SHA256SUMS"
        sums = reader(name)
        failures = []
        for suffix in tv.SIGNATURE_SUFFIXES[tool]:
            try:
                check(tool, sums, reader(name + suffix))
                return tv.listed_sums(sums)
            except Exception as exc:
                failures.append(f"{suffix}: {exc}")
        raise ValueError("; ".join(failures))
