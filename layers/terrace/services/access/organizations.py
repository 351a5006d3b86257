"""Organizations: the tenant boundary. Names are the public keys, as in HCP Terraform."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import Any

from terrace.adapters.table import ConditionFailed, Table
from terrace.domain import clock, limits
from terrace.domain.errors import Conflict, Invalid, NotFound
from terrace.domain.ids import new_id
from terrace.domain.principal import Principal, PrincipalKind
from terrace.services.access.authz import Action, Authorizer, OrgView

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$")
UPDATABLE = (
    "email",
    "session-timeout",
    "session-remember",
    "collaborator-auth-policy",
    "default-execution-mode",
    "cost-estimation-enabled",
)


@dataclass(frozen=True)
class Organization:
    id: str
    name: str
    email: str
    created_at: str
    owners: tuple[str, ...]
    default_execution_mode: str
    settings: dict[str, Any]

    @property
    def view(self) -> OrgView:
        return OrgView(self.name, self.owners)

    @property
    def cost_estimation_enabled(self) -> bool:
        """Runs get a cost estimate (on unless the organization turned it off, as go-tfe expects)."""
        return self.settings.get("cost-estimation-enabled", True) is not False


def _key(name: str) -> tuple[str, str]:
    return f"org#{name}", "org"


def _org(item: dict[str, Any]) -> Organization:
    return Organization(
        id=item["id"],
        name=item["name"],
        email=item.get("email", ""),
        created_at=item["created_at"],
        owners=tuple(item.get("owners", [])),
        default_execution_mode=item.get("default_execution_mode", "remote"),
        settings=dict(item.get("settings", {})),
    )


class OrganizationService:
    # Organizations are read on nearly every request (permissions depend on them) and change rarely:
    # reads are cached per process for a short time. Changes made here take effect at once in this
    # process and within `cache_ttl_s` elsewhere.
    def __init__(self, table: Table, authz: Authorizer, cache_ttl_s: float = 2.0) -> None:
        self._table = table
        self._authz = authz
        self._cache_ttl_s = cache_ttl_s
        self._cache: dict[str, tuple[float, Organization]] = {}

    def lookup(self, name: str) -> Organization:
        """Read without a permission check: for services that check permissions themselves."""
        cached = self._cache.get(name)
        if cached is not None and time.monotonic() - cached[0] < self._cache_ttl_s:
            return cached[1]
        org = _org(self._item(name))
        self._cache[name] = (time.monotonic(), org)
        return org

    def _forget(self, name: str) -> None:
        self._cache.pop(name, None)

    def _item(self, name: str) -> dict[str, Any]:
        item = self._table.get(*_key(name)) if NAME_RE.match(name or "") else None
        if item is None:
            raise NotFound(f"organization {name} not found")
        return item

    def get(self, principal: Principal, name: str, action: Action = Action.READ_ORGANIZATION) -> Organization:
        org = self.lookup(name)
        self._authz.require(principal, action, org.view)
        return org

    def list(self, principal: Principal) -> list[Organization]:
        orgs = [_org(item) for item in self._table.query("orgs", index="gsi1")]
        return [org for org in orgs if self._authz.can(principal, Action.READ_ORGANIZATION, org.view)]

    def create(self, principal: Principal, name: str, email: str, **settings: Any) -> Organization:
        if principal.kind is not PrincipalKind.USER:
            raise NotFound("only users can create organizations")
        if not isinstance(name, str) or not NAME_RE.match(name):
            raise Invalid(
                "name must start with a letter or digit and hold only letters, digits, - and _ (max 63)",
                pointer="/data/attributes/name",
            )
        email = _email(email)
        mode = settings.pop("default-execution-mode", "remote")
        _check_mode(mode)
        if "cost-estimation-enabled" in settings:
            _check_bool(settings, "cost-estimation-enabled")
        settings = {
            key: limits.bounded_json(value, key, limits.EXTRA_ATTRIBUTE_MAX_BYTES) for key, value in settings.items()
        }
        pk, sk = _key(name)
        item = {
            "pk": pk,
            "sk": sk,
            "id": new_id("org"),
            "name": name,
            "email": email,
            "created_at": clock.now_iso(),
            "owners": [principal.subject_id],
            "default_execution_mode": mode,
            "settings": settings,
            "gsi1pk": "orgs",
            "gsi1sk": name,
            "version": 1,
        }
        try:
            self._table.put(item, if_absent=True)
        except ConditionFailed as exc:
            raise Conflict(f"organization {name} already exists") from exc
        return _org(item)

    def update(self, principal: Principal, name: str, changes: dict[str, Any]) -> Organization:
        item = self._item(name)
        self._authz.require(principal, Action.MANAGE_ORGANIZATION, _org(item).view)
        if "name" in changes and changes["name"] != name:
            raise Invalid("renaming an organization is not supported", pointer="/data/attributes/name")
        unknown = set(changes) - set(UPDATABLE) - {"name"}
        if unknown:
            raise Invalid(f"unknown or read-only attributes: {', '.join(sorted(unknown))}")
        if "email" in changes:
            item["email"] = _email(changes["email"])
        if "default-execution-mode" in changes:
            _check_mode(changes["default-execution-mode"])
            item["default_execution_mode"] = changes["default-execution-mode"]
        if "cost-estimation-enabled" in changes:
            _check_bool(changes, "cost-estimation-enabled")
        for key in ("session-timeout", "session-remember", "collaborator-auth-policy", "cost-estimation-enabled"):
            if key in changes:
                value = limits.bounded_json(changes[key], key, limits.EXTRA_ATTRIBUTE_MAX_BYTES)
                item.setdefault("settings", {})[key] = value
        version = item["version"]
        item["version"] = version + 1
        try:
            self._table.put(item, if_version=version)
            self._forget(item["name"])
        except ConditionFailed as exc:
            raise Conflict("organization changed concurrently; retry") from exc
        return _org(item)

    def delete(self, principal: Principal, name: str, *, has_workspaces: bool) -> None:
        item = self._item(name)
        self._authz.require(principal, Action.DELETE_ORGANIZATION, _org(item).view)
        if has_workspaces:
            raise Conflict(f"organization {name} still has workspaces; delete them first")
        self._table.delete(item["pk"], item["sk"], if_version=item["version"])
        self._forget(item["name"])

    def add_owner(self, name: str, user_id: str) -> Organization:
        """Operator path (CLI/bootstrap): make a user an owner of an organization."""
        item = self._item(name)
        if user_id not in item["owners"]:
            item["owners"].append(user_id)
            version = item["version"]
            item["version"] = version + 1
            self._table.put(item, if_version=version)
            self._forget(item["name"])
        return _org(item)


def _email(value: Any) -> str:
    if not isinstance(value, str) or "@" not in value:
        raise Invalid("email is required: an address", pointer="/data/attributes/email")
    return limits.text(value, "email", limits.EMAIL_MAX)


def _check_bool(attrs: dict[str, Any], key: str) -> None:
    if not isinstance(attrs[key], bool):
        raise Invalid(f"{key} must be true or false", pointer=f"/data/attributes/{key}")


def _check_mode(mode: Any) -> None:
    if mode not in ("remote", "local", "agent"):
        raise Invalid(
            "execution mode must be remote, local or agent", pointer="/data/attributes/default-execution-mode"
        )
