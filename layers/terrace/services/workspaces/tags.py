"""Tags: the names on workspaces (`tag_names`) are the truth; each organization keeps a registry that gives
every name it has seen a stable id (`tag-…`), as TFC's `/organizations/:org/tags` and `/tags/:id` need.

The registry is `store_tags.py`. An id is assigned the first time a tag is read or added (a conditional put: of
two writers one wins and the other reads the winner's id); deleting a tag takes it off every workspace, then out
of the registry.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from terrace.domain import clock
from terrace.domain.errors import Invalid, NotFound
from terrace.domain.ids import new_id
from terrace.domain.organizations import Organization
from terrace.domain.principal import Principal
from terrace.domain.tags import Tag, TagRef, all_bindings, effective_bindings, model_name
from terrace.domain.workspace import Workspace
from terrace.services.access.authz import Action
from terrace.services.access.organizations import OrganizationService
from terrace.services.workspaces.attributes import tag_bindings, tag_names
from terrace.services.workspaces.store_tags import RegisteredTag, TagStore
from terrace.services.workspaces.workspaces import WorkspaceService


class TagService:
    def __init__(self, store: TagStore, organizations: OrganizationService, workspaces: WorkspaceService) -> None:
        self._store = store
        self._orgs = organizations
        self._workspaces = workspaces

    # organization tags -----------------------------------------------------------------------
    def list_organization(
        self, principal: Principal, organization: str, query: str | None = None, exclude_on: str | None = None
    ) -> list[Tag]:
        """Every tag in use in the organization, sorted by name, with the number of workspaces that carry it;
        `query` keeps names containing it, `exclude_on` drops the tags of that workspace."""
        org = self._orgs.get(principal, organization)
        workspaces = self._workspaces.all_in(org.key)
        counts: dict[str, int] = {}
        for ws in workspaces:
            for name in ws.tag_names:
                counts[name] = counts.get(name, 0) + 1
        excluded = next((set(ws.tag_names) for ws in workspaces if ws.id == exclude_on), set())
        names = [n for n in sorted(counts) if (not query or query.lower() in n) and n not in excluded]
        registered = self._ids(org, names)
        return [dataclasses.replace(registered[n], instance_count=counts[n]) for n in names]

    def delete_organization_tags(self, principal: Principal, organization: str, ids: list[str]) -> None:
        org = self._orgs.get(principal, organization, Action.MANAGE_ORGANIZATION)
        names = {self._by_id(org, tag_id).name for tag_id in ids}
        for ws in self._workspaces.all_in(org.key):
            if names & set(ws.tag_names):
                self._workspaces.mutate(
                    ws.id,
                    lambda cur: dataclasses.replace(cur, tag_names=tuple(t for t in cur.tag_names if t not in names)),
                )
        for name in names:
            self._store.delete(org.key, name)

    def add_workspaces(self, principal: Principal, tag_id: str, workspace_ids: list[str]) -> None:
        tag = self._store.find(tag_id)
        if tag is None:
            raise NotFound(f"tag {tag_id} not found")
        org = self._orgs.by_key(tag.organization)
        self._orgs.get(principal, org.name, Action.READ_ORGANIZATION)
        targets = [self._workspaces.get(principal, ws_id, Action.UPDATE_WORKSPACE) for ws_id in workspace_ids]
        for ws in targets:
            if ws.organization != org.key:
                raise NotFound(f"workspace {ws.id} not found")
        for ws in targets:
            self._add(ws, [tag.name])

    # workspace tags --------------------------------------------------------------------------
    def of_workspace(self, principal: Principal, ws: Workspace) -> list[Tag]:
        self._workspaces.authorize(principal, Action.READ_WORKSPACE, ws)
        registered = self._ids(self._workspaces.organization_of(ws), sorted(ws.tag_names))
        return [registered[name] for name in sorted(ws.tag_names)]

    def add_to_workspace(self, principal: Principal, ws: Workspace, refs: list[TagRef]) -> Workspace:
        org = self._workspaces.authorize(principal, Action.UPDATE_WORKSPACE, ws)
        return self._add(ws, self._names(org, refs))

    def remove_from_workspace(self, principal: Principal, ws: Workspace, refs: list[TagRef]) -> Workspace:
        org = self._workspaces.authorize(principal, Action.UPDATE_WORKSPACE, ws)
        gone = set(self._names(org, refs, missing_ok=True))
        return self._workspaces.mutate(
            ws.id, lambda cur: dataclasses.replace(cur, tag_names=tuple(t for t in cur.tag_names if t not in gone))
        )

    def bindings(self, principal: Principal, ws: Workspace) -> list[tuple[str, str]]:
        """Key-value bindings, and each plain tag as a key without a value (as TFC lists them)."""
        self._workspaces.authorize(principal, Action.READ_WORKSPACE, ws)
        return all_bindings(ws)

    def effective_bindings(self, principal: Principal, ws: Workspace) -> list[tuple[str, str]]:
        """Its bindings over its project's (its own value of a key wins)."""
        return effective_bindings(self._workspaces.inherited_bindings(ws), self.bindings(principal, ws))

    def add_bindings(self, principal: Principal, ws: Workspace, items: Any) -> Workspace:
        """Add key-value tag bindings (an existing key takes the new value); a key without a value is also a
        plain tag, so `search[tags]` and the tags API see it."""
        self._workspaces.authorize(principal, Action.UPDATE_WORKSPACE, ws)
        given = dict(tag_bindings(items, "/data"))
        plain = [key.lower() for key, value in given.items() if not value and model_name(key)]

        def change(cur: Workspace) -> Workspace:
            merged = {**dict(cur.tag_bindings), **given}
            names = sorted({*cur.tag_names, *plain})
            changed = dataclasses.replace(cur, tag_bindings=tuple(merged.items()), tag_names=tuple(names))
            self._workspaces.check_tag_bindings(changed)
            return changed

        updated = self._workspaces.mutate(ws.id, change)
        self._ids(self._workspaces.organization_of(ws), plain)
        return updated

    # helpers ---------------------------------------------------------------------------------
    def _add(self, ws: Workspace, names: list[str]) -> Workspace:
        updated = self._workspaces.mutate(
            ws.id, lambda cur: dataclasses.replace(cur, tag_names=tuple(sorted({*cur.tag_names, *names})))
        )
        self._ids(self._workspaces.organization_of(ws), names)  # ids only for tags a workspace carries
        return updated

    def _names(self, org: Organization, refs: list[TagRef], *, missing_ok: bool = False) -> list[str]:
        if not refs:
            raise Invalid("at least one tag (id or name) is required", pointer="/data")
        names: list[str] = []
        for ref in refs:
            if ref.name:
                names += tag_names([ref.name])
            elif ref.id:
                try:
                    names.append(self._by_id(org, ref.id).name)
                except NotFound:
                    if not missing_ok:
                        raise
            else:
                raise Invalid("each tag needs an id or attributes.name", pointer="/data")
        return names

    def _by_id(self, org: Organization, tag_id: str) -> Tag:
        tag = self._store.find(tag_id)
        if tag is None or tag.organization != org.key:
            raise NotFound(f"tag {tag_id} not found")
        return Tag(tag_id, tag.name, org.name, tag.created_at)

    def _ids(self, org: Organization, names: list[str]) -> dict[str, Tag]:
        """The registry entry of each name, created for names seen for the first time."""
        known = self._store.registered(org.key)
        found: dict[str, Tag] = {}
        for name in names:
            entry = known.get(name) or self._register(org, name)
            found[name] = Tag(entry.id, name, org.name, entry.created_at)
        return found

    def _register(self, org: Organization, name: str) -> RegisteredTag:
        return self._store.register(RegisteredTag(new_id("tag"), org.key, name, clock.now_iso()))
