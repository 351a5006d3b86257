"""The site admin API over the deployment's tool versions (`/api/v2/admin/terraform-versions`, `opentofu-versions`,
and the policy tools' `opa-versions` and `sentinel-versions`):
every call checks that the caller is a site admin (anyone else: 404), and reads carry how many workspaces ask for
each exact version (constraints are not counted)."""

from __future__ import annotations

import builtins
from typing import Any

from terrace.domain import tool_versions as tv
from terrace.domain.errors import NotFound
from terrace.domain.principal import Principal
from terrace.domain.tool_versions import ToolVersion
from terrace.services.access.authz import Authorizer
from terrace.services.admin.site import SiteAdminService
from terrace.services.admin.tool_versions import ToolVersionService

KINDS = tv.CATALOGS  # the API's paths, by tool

Usage = dict[str, int]


class ToolVersionAdmin:
    def __init__(self, authz: Authorizer, tool_versions: ToolVersionService, site: SiteAdminService) -> None:
        self._authz = authz
        self._versions = tool_versions
        self._site = site

    def _tool(self, principal: Principal, kind: str) -> str:
        self._authz.require_site_admin(principal)
        if kind not in KINDS:
            raise NotFound(f"/api/v2/admin/{kind} not found")
        return KINDS[kind]

    def _usage(self, principal: Principal, tool: str = "terraform") -> Usage:
        """Workspaces pinned to each exact version whose runs use `tool`: the workspace's own (`iac-platform`); for
        one stored before workspaces had a tool, a version both tools release counts for the one its runs resolve
        it to (the default tool first, `ToolVersionService.tool_of`), never for both."""
        counts: Usage = {}
        if tool not in tv.TOOLS:
            return counts  # a policy tool's version is asked for by no workspace
        owners: dict[str, str] = {}
        for ws in self._site.workspaces(principal)[0]:
            version = ws.terraform_version
            if not ws.tool and version not in owners:
                owners[version] = self._versions.tool_of(version) or self._versions.default_tool
            if (ws.tool or owners[version]) == tool:
                counts[version] = counts.get(version, 0) + 1
        return counts

    def list(
        self, principal: Principal, kind: str, *, exact: str = "", search: str = ""
    ) -> tuple[builtins.list[ToolVersion], Usage]:
        tool = self._tool(principal, kind)
        return self._versions.list(tool, exact=exact, search=search), self._usage(principal, tool)

    def get(self, principal: Principal, kind: str, record_id: str) -> tuple[ToolVersion, int]:
        record = self._versions.get(self._tool(principal, kind), record_id)
        return record, self._usage(principal, record.tool).get(record.version, 0)

    def create(self, principal: Principal, kind: str, attrs: dict[str, Any]) -> ToolVersion:
        return self._versions.create(self._tool(principal, kind), attrs)

    def update(self, principal: Principal, kind: str, record_id: str, attrs: dict[str, Any]) -> tuple[ToolVersion, int]:
        record = self._versions.update(self._tool(principal, kind), record_id, attrs)
        return record, self._usage(principal, record.tool).get(record.version, 0)

    def delete(self, principal: Principal, kind: str, record_id: str) -> None:
        self._versions.delete(self._tool(principal, kind), record_id)
