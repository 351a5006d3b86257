"""Policy sets of an organization (`/organizations/:org/policy-sets`, `/policy-sets/:id` and its relationships).

A set holds its members as id lists on its own item (policies, workspaces, projects, workspace exclusions; each
bounded), so a membership change is one conditional write. Reading needs membership; changes need the
`manage-policies` organization access.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable
from typing import Any

from terrace.domain import clock
from terrace.domain import policies as rules
from terrace.domain.errors import Forbidden, Invalid, NotFound
from terrace.domain.ids import looks_like, new_id
from terrace.domain.organizations import Organization
from terrace.domain.policies import PolicySet, check_tag_selectors
from terrace.domain.principal import Principal
from terrace.domain.projects import default_project_id
from terrace.domain.workspace import Workspace
from terrace.services.access.authz import Action
from terrace.services.access.organizations import OrganizationService
from terrace.services.access.projects import ProjectService
from terrace.services.optimistic import optimistic
from terrace.services.policies.policies import PolicyService
from terrace.services.policies.store import PolicyStore, policy_set_from_record, stored_selectors
from terrace.services.workspaces.repository_link import OwnerLink
from terrace.services.workspaces.workspaces import WorkspaceService

# relationship name -> the item's list and what its members are
MEMBERS = {
    "policies": "policy_ids",
    "workspaces": "workspace_ids",
    "projects": "project_ids",
    "workspace-exclusions": "exclusion_ids",
    "project-exclusions": "project_exclusion_ids",
}


class PolicySetService:
    def __init__(
        self,
        store: PolicyStore,
        organizations: OrganizationService,
        workspaces: WorkspaceService,
        projects: ProjectService,
        policies: PolicyService,
        repository_link: OwnerLink | None = None,
    ) -> None:
        self._store, self._orgs, self._workspaces = store, organizations, workspaces
        self._projects, self._policies = projects, policies
        self._link = repository_link  # a set's `vcs-repo` (the VCS area): its webhook, its versions from pushes

    def _public(self, record: dict[str, Any]) -> PolicySet:
        return policy_set_from_record(record, self._orgs.name_of(record["organization"]))

    def _item(self, principal: Principal, set_id: str, action: Action) -> tuple[dict[str, Any], Organization]:
        item = self._store.policy_set(set_id) if looks_like(set_id, "polset") else None
        try:
            org = self._orgs.get_by_key(principal, item["organization"], action) if item else None
        except NotFound:
            org = None
        if item is None or org is None or item.get("organization_id") != org.id:
            raise NotFound(f"policy set {set_id} not found")
        return item, org

    # reads -------------------------------------------------------------------------------------
    def get(self, principal: Principal, set_id: str, action: Action = Action.READ_POLICIES) -> PolicySet:
        return self._public(self._item(principal, set_id, action)[0])

    def can_manage(self, principal: Principal, set_id: str) -> bool:
        """Whether the caller may change the set (`manage-policies`, decided by the Authorizer): who may be handed
        the upload link of one of its pending versions."""
        try:
            self._item(principal, set_id, Action.MANAGE_POLICIES)
        except (Forbidden, NotFound):
            return False
        return True

    def load(self, set_id: str) -> PolicySet | None:
        item = self._store.policy_set(set_id) if looks_like(set_id, "polset") else None
        return None if item is None else self._public(item)

    def list(
        self, principal: Principal, organization: str, search: str | None = None, kind: str | None = None
    ) -> builtins.list[PolicySet]:
        org = self._orgs.get(principal, organization, Action.READ_POLICIES)
        found = self.of_organization(org)
        return [s for s in found if (not search or search.lower() in s.name.lower()) and (not kind or s.kind == kind)]

    def organization_of(self, ps: PolicySet) -> Organization | None:
        item = self._store.policy_set(ps.id)
        return None if item is None else self._orgs.by_key(item["organization"])

    def of_organization(self, org: Organization) -> builtins.list[PolicySet]:
        items = [i for i in self._store.policy_sets_of(org.key) if i.get("organization_id") == org.id]
        return sorted((self._public(i) for i in items), key=lambda s: (s.created_at, s.id))

    def applying_to(self, ws: Workspace) -> builtins.list[PolicySet]:
        """The OPA policy sets that apply to a workspace's runs."""
        org = self._orgs.by_key(ws.organization)
        project = ws.project_id or default_project_id(ws.organization)
        sets = self.of_organization(org)
        return [s for s in sets if s.kind == "opa" and s.applies_to(ws.id, project, ws.tag_bindings)]

    def policy_set_count(self, principal: Principal, organization: str) -> dict[str, int]:
        """How many sets of the organization each policy belongs to."""
        counts: dict[str, int] = {}
        for s in self.list(principal, organization):
            for policy_id in s.policy_ids:
                counts[policy_id] = counts.get(policy_id, 0) + 1
        return counts

    def members(self, ps: PolicySet, relation: str) -> builtins.list[Any]:
        """The members of a set `relation` that still exist (for `include=`): workspaces, projects or policies."""
        found: builtins.list[Any] = []
        ids = {"workspaces": ps.workspace_ids, "workspace_exclusions": ps.exclusion_ids, "projects": ps.project_ids,
               "project_exclusions": ps.project_exclusion_ids, "policies": ps.policy_ids}[relation]  # fmt: skip
        for member in ids:
            try:
                if relation in ("projects", "project_exclusions"):
                    found.append(self._projects.load(member))
                elif relation == "policies":
                    org = self.organization_of(ps)
                    found.extend(self._policies.in_organization(org, [member]) if org else [])
                else:
                    found.append(self._workspaces.load(member))
            except NotFound:
                continue
        return found

    def workspace_ids(self, principal: Principal, organization: str, names: builtins.list[str]) -> builtins.list[str]:
        """The ids of workspaces named in a form (the UI's policy set form); NotFound for one the caller cannot see."""
        return [self._workspaces.get_by_name(principal, organization, name).id for name in names]

    # changes -----------------------------------------------------------------------------------
    def create(
        self, principal: Principal, organization: str, attrs: dict[str, Any], members: dict[str, builtins.list[str]]
    ) -> PolicySet:
        org = self._orgs.get(principal, organization, Action.MANAGE_POLICIES)
        if len(self.of_organization(org)) >= rules.POLICY_SETS_MAX:
            raise Invalid(f"an organization has at most {rules.POLICY_SETS_MAX} policy sets")
        name = rules.check_name(attrs.get("name"))
        kind = rules.check_kind(attrs.get("kind"))
        now, set_id = clock.now_iso(), new_id("polset")
        item: dict[str, Any] = {
            "id": set_id,
            "organization": org.key,
            "organization_id": org.id,
            "name": name,
            "kind": kind,
            "created_at": now,
            "updated_at": now,
            "version": 1,
        }
        self._settings(item, attrs)
        if attrs.get("tag-selectors") is not None:
            item["tag_selectors"] = stored_selectors(
                check_tag_selectors(attrs["tag-selectors"], "/data/attributes/tag-selectors")
            )
        for relation, ids in members.items():
            item[MEMBERS[relation]] = self._checked(org, kind, relation, ids)
        if attrs.get("vcs-repo") and self._link is not None:
            item["vcs_repo"] = self._link.connect_owner(principal, org.key, set_id, attrs["vcs-repo"], None)
        self._store.create_policy_set(item)
        if item.get("vcs_repo") and self._link is not None:
            self._link.announce(set_id)
        return self._public(item)

    def update(self, principal: Principal, set_id: str, attrs: dict[str, Any]) -> PolicySet:
        item, org = self._item(principal, set_id, Action.MANAGE_POLICIES)
        new_name = rules.check_name(attrs["name"]) if "name" in attrs else item["name"]
        if new_name.lower() != item["name"].lower():
            self._store.rename_policy_set(org.key, set_id, item["name"], new_name)
        before = rules.repository_source(item.get("vcs_repo"), item.get("policies_path", ""))
        repo = item.get("vcs_repo")
        if "vcs-repo" in attrs and self._link is not None:
            repo = self._link.connect_owner(principal, org.key, set_id, attrs["vcs-repo"], item.get("vcs_repo"))
        updated = self._change(set_id, lambda i: self._settings({**i, "name": new_name, "vcs_repo": repo}, attrs))
        if repo and self._link is not None and rules.repository_source(repo, updated.policies_path) != before:
            self._link.announce(set_id)  # another repository, branch or path: a version from its head
        return updated

    def delete(self, principal: Principal, set_id: str) -> None:
        item, _ = self._item(principal, set_id, Action.MANAGE_POLICIES)
        if item.get("vcs_repo") and self._link is not None:
            self._link.release(set_id)
        self._store.delete_policy_set(item)

    def change_members(self, principal: Principal, set_id: str, relation: str, ids: Any, add: bool) -> PolicySet:
        item, org = self._item(principal, set_id, Action.MANAGE_POLICIES)
        if not isinstance(ids, list) or not ids:
            raise Invalid(f"{relation} must be a non-empty list of {{type, id}}", pointer="/data")
        wanted = self._checked(org, item["kind"], relation, ids) if add else [str(i) for i in ids]
        field = MEMBERS[relation]

        def step(current: dict[str, Any]) -> dict[str, Any]:
            held = list(current.get(field, []))
            updated = held + [i for i in wanted if i not in held] if add else [i for i in held if i not in wanted]
            if len(updated) > rules.MEMBERS_MAX:
                raise Invalid(f"a policy set has at most {rules.MEMBERS_MAX} {relation}")
            return {**current, field: updated}

        return self._change(set_id, step)

    def change_tag_selectors(self, principal: Principal, set_id: str, raw: Any, add: bool) -> PolicySet:
        """Tag selectors added to the set (`POST /policy-sets/:id/tag-selectors`) or removed from it (`DELETE`)."""
        self._item(principal, set_id, Action.MANAGE_POLICIES)
        wanted = stored_selectors(check_tag_selectors(raw))

        def step(current: dict[str, Any]) -> dict[str, Any]:
            held = list(current.get("tag_selectors", []))
            updated = held + [s for s in wanted if s not in held] if add else [s for s in held if s not in wanted]
            if len(updated) > rules.MEMBERS_MAX:
                raise Invalid(f"a policy set has at most {rules.MEMBERS_MAX} tag selectors")
            return {**current, "tag_selectors": updated}

        return self._change(set_id, step)

    def forget_policy(self, org: Organization, policy_id: str) -> None:
        """A deleted policy leaves every set that held it."""
        for s in self.of_organization(org):
            if policy_id in s.policy_ids:
                self._change(s.id, lambda i: _without(i, "policy_ids", policy_id))

    def record_version(self, set_id: str, version_id: str, *, current: bool) -> None:
        field = "current_version_id" if current else "newest_version_id"
        self._change(set_id, lambda i: {**i, field: version_id})

    # helpers -----------------------------------------------------------------------------------
    @staticmethod
    def _settings(item: dict[str, Any], attrs: dict[str, Any]) -> dict[str, Any]:
        kind = item["kind"]
        item["description"] = rules.check_description(attrs, item.get("description", ""))
        item["global"] = rules.check_bool(attrs, "global", bool(item.get("global")))
        item["overridable"] = rules.overridable_for(kind, attrs.get("overridable"), bool(item.get("overridable")))
        item["agent_enabled"] = rules.check_bool(attrs, "agent-enabled", bool(item.get("agent_enabled")))
        tool = attrs.get("policy-tool-version", item.get("policy_tool_version", ""))
        item["policy_tool_version"] = str(tool or "")[:64] if item["agent_enabled"] else ""
        item["policies_path"] = rules.check_policies_path(attrs.get("policies-path", item.get("policies_path", "")))
        # HCP's name is `policy-update-patterns`; the singular, which Terrace once read, is still taken
        pattern = attrs.get(
            "policy-update-patterns", attrs.get("policy-update-pattern", item.get("policy_update_pattern", []))
        )
        item["policy_update_pattern"] = [str(p)[:256] for p in pattern][:50] if isinstance(pattern, list) else []
        return item

    def _checked(self, org: Organization, kind: str, relation: str, ids: builtins.list[Any]) -> builtins.list[str]:
        """The ids of `relation` members, each one of this organization's (NotFound otherwise)."""
        if len(ids) > rules.MEMBERS_MAX:
            raise Invalid(f"a policy set has at most {rules.MEMBERS_MAX} {relation}")
        found: builtins.list[str] = []
        for raw in ids:
            member = str(raw)
            if relation == "policies":
                policy = self._policies.in_organization(org, [member])[0]
                if policy.kind != kind:
                    raise Invalid(f"policy {member} is a {policy.kind} policy; this policy set is {kind}")
            elif relation in ("projects", "project-exclusions"):
                self._projects.in_organization(org.key, member)
            else:
                try:
                    ws = self._workspaces.load(member)
                except NotFound:
                    ws = None
                if ws is None or ws.organization != org.key:
                    raise NotFound(f"workspace {member} not found")
            if member not in found:
                found.append(member)
        return found

    def _change(self, set_id: str, change: Callable[[dict[str, Any]], dict[str, Any]]) -> PolicySet:
        def step() -> PolicySet:
            item = self._store.policy_set(set_id)
            if item is None:
                raise NotFound(f"policy set {set_id} not found")
            version = item["version"]
            updated = change(dict(item))
            updated["version"], updated["updated_at"] = version + 1, clock.now_iso()
            self._store.replace_policy_set(updated, version)
            return self._public(updated)

        return optimistic(step, exhausted=f"policy set {set_id} changed concurrently; retry")


def _without(item: dict[str, Any], field: str, member: str) -> dict[str, Any]:
    return {**item, field: [m for m in item.get(field, []) if m != member]}
