"""Policies of an organization (`/organizations/:org/policies`, `/policies/:id`, `/upload`, `/download`).

An `opa` policy's Rego is compiled by the policy engine when it is uploaded (422 with the engine's message when it
does not compile); a `sentinel` policy is stored as sent (Terrace never evaluates Sentinel). Reading needs
membership; changes need the `manage-policies` organization access.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable
from typing import Any

from terrace.adapters.policy_engine import PolicyEngine
from terrace.domain import clock
from terrace.domain import policies as rules
from terrace.domain.errors import Invalid, NotFound, TooLarge
from terrace.domain.ids import looks_like, new_id
from terrace.domain.organizations import Organization
from terrace.domain.policies import Policy
from terrace.domain.principal import Principal
from terrace.services.access.authz import Action
from terrace.services.access.organizations import OrganizationService
from terrace.services.policies.store import PolicyStore

PolicyDeleted = Callable[[Organization, str], None]  # (organization, policy id): the policy sets forget it


class PolicyService:
    def __init__(
        self, store: PolicyStore, organizations: OrganizationService, engine: PolicyEngine, *, on_delete: PolicyDeleted
    ) -> None:
        self._store, self._orgs, self._engine = store, organizations, engine
        self.on_delete = on_delete  # a deleted policy leaves the policy sets that held it

    # reads -------------------------------------------------------------------------------------
    def _public(self, item: dict[str, Any]) -> Policy:
        return Policy(
            id=item["id"],
            organization=self._orgs.name_of(item["organization"]),
            name=item["name"],
            kind=item["kind"],
            description=item.get("description", ""),
            query=item.get("query"),
            enforcement_level=item["enforcement_level"],
            enforce_path=item["enforce_path"],
            has_content=item.get("content") is not None,
            policy_set_ids=(),
            updated_at=item["updated_at"],
        )

    def _item(self, principal: Principal, policy_id: str, action: Action) -> tuple[dict[str, Any], Organization]:
        item = self._store.policy(policy_id) if looks_like(policy_id, "pol") else None
        try:
            org = self._orgs.get_by_key(principal, item["organization"], action) if item else None
        except NotFound:
            org = None
        if item is None or org is None or item.get("organization_id") != org.id:
            raise NotFound(f"policy {policy_id} not found")
        return item, org

    def get(self, principal: Principal, policy_id: str) -> Policy:
        return self._public(self._item(principal, policy_id, Action.READ_POLICIES)[0])

    def list(
        self, principal: Principal, organization: str, search: str | None = None, kind: str | None = None
    ) -> builtins.list[Policy]:
        org = self._orgs.get(principal, organization, Action.READ_POLICIES)
        items = [i for i in self._store.policies_of(org.key) if i.get("organization_id") == org.id]
        found = [self._public(i) for i in items]
        return [p for p in found if (not search or search.lower() in p.name.lower()) and (not kind or p.kind == kind)]

    def in_organization(self, org: Organization, policy_ids: builtins.list[str]) -> builtins.list[Policy]:
        """The named policies of `org` (NotFound naming the first that is not one of its policies)."""
        found = []
        for policy_id in policy_ids:
            item = self._store.policy(policy_id) if looks_like(policy_id, "pol") else None
            if item is None or item.get("organization_id") != org.id:
                raise NotFound(f"policy {policy_id} not found")
            found.append(self._public(item))
        return found

    def content(self, policy_id: str) -> str | None:
        """A policy's Rego or Sentinel text (for evaluations of sets it belongs to)."""
        item = self._store.policy(policy_id)
        return None if item is None else item.get("content")

    def download(self, principal: Principal, policy_id: str) -> bytes:
        item, _ = self._item(principal, policy_id, Action.READ_POLICIES)
        if item.get("content") is None:
            raise NotFound(f"policy {policy_id} has no content yet")
        return str(item["content"]).encode()

    # changes -----------------------------------------------------------------------------------
    def create(self, principal: Principal, organization: str, attrs: dict[str, Any]) -> Policy:
        org = self._orgs.get(principal, organization, Action.MANAGE_POLICIES)
        name = rules.check_name(attrs.get("name"))
        kind = rules.check_kind(attrs.get("kind"))
        suffix = ".rego" if kind == "opa" else ".sentinel"
        level, path = rules.enforcement(kind, attrs, name + suffix)
        if level is None:
            raise Invalid("enforcement-level (or enforce) is required", pointer="/data/attributes/enforcement-level")
        now, policy_id = clock.now_iso(), new_id("pol")
        item = {
            "id": policy_id,
            "organization": org.key,
            "organization_id": org.id,
            "name": name,
            "kind": kind,
            "description": rules.check_description(attrs),
            "query": rules.check_query(attrs.get("query")) if kind == "opa" else None,
            "enforcement_level": level,
            "enforce_path": path or name + suffix,
            "content": None,
            "created_at": now,
            "updated_at": now,
            "version": 1,
        }
        self._store.create_policy(item)
        return self._public(item)

    def create_with_content(self, principal: Principal, organization: str, attrs: dict[str, Any], text: str) -> Policy:
        """The UI's form: the text is bounded (and the Rego compiled) first, so a policy refused for its text leaves
        nothing behind; compiled once (each compile is a child process), then written with the policy."""
        self._orgs.get(principal, organization, Action.MANAGE_POLICIES)
        pending = {"kind": rules.check_kind(attrs.get("kind")), "enforce_path": f"{attrs.get('name')}.rego"}
        content = self._checked(pending, text.encode(), pointer="/data/attributes/content")
        policy = self.create(principal, organization, attrs)
        item, _ = self._item(principal, policy.id, Action.MANAGE_POLICIES)
        item["content"] = content
        return self._write(item, item["version"])

    def update(self, principal: Principal, policy_id: str, attrs: dict[str, Any]) -> Policy:
        item, _ = self._item(principal, policy_id, Action.MANAGE_POLICIES)
        version = item["version"]
        item["description"] = rules.check_description(attrs, item.get("description", ""))
        level, path = rules.enforcement(item["kind"], attrs, item["enforce_path"])
        if level is not None:
            item["enforcement_level"] = level
        if path is not None:
            item["enforce_path"] = path
        if item["kind"] == "opa" and "query" in attrs:
            item["query"] = rules.check_query(attrs.get("query"))
        return self._write(item, version)

    def change(self, principal: Principal, policy_id: str, level: str | None, rego: str | None) -> Policy:
        """The UI's form: the enforcement level and, when given, new Rego, checked both before one write (a refused
        change changes nothing)."""
        item, _ = self._item(principal, policy_id, Action.MANAGE_POLICIES)
        version = item["version"]
        new_level, path = rules.enforcement(item["kind"], {"enforcement-level": level}, item["enforce_path"])
        if new_level is not None:
            item["enforcement_level"] = new_level
        if path is not None:
            item["enforce_path"] = path
        if rego is not None:
            item["content"] = self._checked(item, rego.encode())
        return self._write(item, version)

    def upload(self, principal: Principal, policy_id: str, body: bytes) -> None:
        item, _ = self._item(principal, policy_id, Action.MANAGE_POLICIES)
        text = self._checked(item, body)
        version = item["version"]
        item["content"] = text
        self._write(item, version)

    def _checked(self, item: dict[str, Any], body: bytes, pointer: str | None = None) -> str:
        """A policy's new text: UTF-8, bounded, and (OPA) compiling (`pointer`: the input a compile error names)."""
        if len(body) > rules.CONTENT_MAX_BYTES:
            raise TooLarge(f"a policy is at most {rules.CONTENT_MAX_BYTES} bytes")
        try:
            text = body.decode()
        except UnicodeDecodeError as exc:
            raise Invalid("a policy must be UTF-8 text") from exc
        if item["kind"] == "opa":
            error = self._engine.check({item["enforce_path"]: text})
            if error:
                raise Invalid(f"the policy does not compile: {error}", pointer=pointer)
        return text

    def delete(self, principal: Principal, policy_id: str) -> Policy:
        item, org = self._item(principal, policy_id, Action.MANAGE_POLICIES)
        self._store.delete_policy(item)
        self.on_delete(org, policy_id)
        return self._public(item)

    def _write(self, item: dict[str, Any], version: int) -> Policy:
        item["version"], item["updated_at"] = version + 1, clock.now_iso()
        self._store.replace_policy(item, version)
        return self._public(item)
