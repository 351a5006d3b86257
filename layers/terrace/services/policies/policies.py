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
from terrace.adapters.table import ConditionFailed, Put, Table
from terrace.domain import clock
from terrace.domain import policies as rules
from terrace.domain.errors import Conflict, Invalid, NotFound, TooLarge
from terrace.domain.ids import looks_like, new_id
from terrace.domain.organizations import Organization
from terrace.domain.policies import Policy
from terrace.domain.principal import Principal
from terrace.services.access.authz import Action
from terrace.services.access.organizations import OrganizationService

SORT_KEY = "policy"


def _index(org: Organization) -> str:
    return f"org#{org.key}#policies"


def _claims(org: Organization) -> str:
    return f"org#{org.key}#policynames"


PolicyDeleted = Callable[[Organization, str], None]  # (organization, policy id): the policy sets forget it


class PolicyService:
    def __init__(
        self, table: Table, organizations: OrganizationService, engine: PolicyEngine, *, on_delete: PolicyDeleted
    ) -> None:
        self._table, self._orgs, self._engine = table, organizations, engine
        self.on_delete = on_delete  # a deleted policy leaves the policy sets that held it

    # reads -------------------------------------------------------------------------------------
    def _public(self, item: dict[str, Any]) -> Policy:
        return Policy(
            id=item["pk"],
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
        item = self._table.get(policy_id, SORT_KEY) if looks_like(policy_id, "pol") else None
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
        items = [i for i in self._table.query(_index(org), index="gsi1") if i.get("organization_id") == org.id]
        found = [self._public(i) for i in items]
        return [p for p in found if (not search or search.lower() in p.name.lower()) and (not kind or p.kind == kind)]

    def in_organization(self, org: Organization, policy_ids: builtins.list[str]) -> builtins.list[Policy]:
        """The named policies of `org` (NotFound naming the first that is not one of its policies)."""
        found = []
        for policy_id in policy_ids:
            item = self._table.get(policy_id, SORT_KEY) if looks_like(policy_id, "pol") else None
            if item is None or item.get("organization_id") != org.id:
                raise NotFound(f"policy {policy_id} not found")
            found.append(self._public(item))
        return found

    def content(self, policy_id: str) -> str | None:
        """A policy's Rego or Sentinel text (for evaluations of sets it belongs to)."""
        item = self._table.get(policy_id, SORT_KEY)
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
            "pk": policy_id,
            "sk": SORT_KEY,
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
            "gsi1pk": _index(org),
            "gsi1sk": f"{name}#{policy_id}",
        }
        claim = {"pk": _claims(org), "sk": name.lower(), "policy_id": policy_id}
        try:
            self._table.transact([Put(item, if_absent=True), Put(claim, if_absent=True)])
        except ConditionFailed as exc:
            raise Invalid(f"name {name} has already been taken", pointer="/data/attributes/name") from exc
        return self._public(item)

    def create_with_content(self, principal: Principal, organization: str, attrs: dict[str, Any], text: str) -> Policy:
        """The UI's form: the Rego is compiled first, so a policy that does not compile leaves nothing behind."""
        self._orgs.get(principal, organization, Action.MANAGE_POLICIES)
        if attrs.get("kind") == "opa":
            error = self._engine.check({f"{attrs.get('name')}.rego": text})
            if error:
                raise Invalid(f"the policy does not compile: {error}", pointer="/data/attributes/content")
        policy = self.create(principal, organization, attrs)
        self.upload(principal, policy.id, text.encode())
        return self.get(principal, policy.id)

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

    def _checked(self, item: dict[str, Any], body: bytes) -> str:
        """A policy's new text: UTF-8, bounded, and (OPA) compiling."""
        if len(body) > rules.CONTENT_MAX_BYTES:
            raise TooLarge(f"a policy is at most {rules.CONTENT_MAX_BYTES} bytes")
        try:
            text = body.decode()
        except UnicodeDecodeError as exc:
            raise Invalid("a policy must be UTF-8 text") from exc
        if item["kind"] == "opa":
            error = self._engine.check({item["enforce_path"]: text})
            if error:
                raise Invalid(f"the policy does not compile: {error}")
        return text

    def delete(self, principal: Principal, policy_id: str) -> Policy:
        item, org = self._item(principal, policy_id, Action.MANAGE_POLICIES)
        self._table.delete(_claims(org), item["name"].lower())
        self._table.delete(policy_id, SORT_KEY)
        self.on_delete(org, policy_id)
        return self._public(item)

    def _write(self, item: dict[str, Any], version: int) -> Policy:
        item["version"], item["updated_at"] = version + 1, clock.now_iso()
        try:
            self._table.put(item, if_version=version)
        except ConditionFailed as exc:
            raise Conflict(f"policy {item['pk']} changed concurrently; retry") from exc
        return self._public(item)
