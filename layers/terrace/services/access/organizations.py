"""Organizations: the tenant boundary. Names are the public keys, as in HCP Terraform.

Storage keys everything of an organization (its workspaces, job queue, tokens, index items) by its `key`:
the name it was created with. A name claim `orgname#<name>` points at the key, so a rename is one
transaction (new claim, old claim gone, the organization item's name changed) and nothing else moves: the
old name is 404 at once, the workspaces, state, runs and tokens keep working. An organization created
under a name still used as another's key gets its external id as key.
"""

from __future__ import annotations

import builtins
import time
from collections.abc import Callable
from typing import Any

from terrace.adapters.table import ConditionFailed, Delete, Put, Table, WriteOp
from terrace.domain import assessments, clock
from terrace.domain.agent_pools import DEFAULT_POOL_SETTING as DEFAULT_AGENT_POOL
from terrace.domain.errors import Conflict, NotFound
from terrace.domain.ids import new_id
from terrace.domain.organizations import (
    BOOLEAN_SETTINGS,
    NAME_RE,
    Organization,
    check_email,
    check_mode,
    check_name,
    check_setting,
)
from terrace.domain.principal import Principal, PrincipalKind
from terrace.services.access import org_defaults
from terrace.services.access.authz import Action, Authorizer


def _key(key: str) -> tuple[str, str]:
    return f"org#{key}", "org"


def _name_claim(name: str) -> tuple[str, str]:
    """Names are unique whatever their case (HCP Terraform's): the claim is on the lower-cased name."""
    return f"orgname#{name.lower()}", "orgname"


def _exact_claim(name: str) -> tuple[str, str]:
    """The claim as stored before names were unique whatever their case (still read, deleted with its name)."""
    return f"orgname#{name}", "orgname"


def _org(item: dict[str, Any]) -> Organization:
    return Organization(
        id=item["id"],
        key=item.get("key", item["pk"].removeprefix("org#")),
        name=item["name"],
        email=item.get("email", ""),
        created_at=item["created_at"],
        owners=tuple(item.get("owners", [])),
        default_execution_mode=item.get("default_execution_mode", "remote"),
        settings=dict(item.get("settings", {})),
    )


# the workspaces area's agent pools (`AgentPoolService.check_default`): the default pool an update leaves
DefaultPoolCheck = Callable[[Organization, str, str | None], str | None]


class OrganizationService:
    # Organizations are read on nearly every request (permissions depend on them) and change rarely:
    # reads are cached per process for a short time. Changes made here take effect at once in this
    # process and within `cache_ttl_s` elsewhere.
    def __init__(
        self,
        table: Table,
        authz: Authorizer,
        *,
        check_default_agent_pool: DefaultPoolCheck,
        cache_ttl_s: float = 2.0,
    ) -> None:
        self._table = table
        self._authz = authz
        self._cache_ttl_s = cache_ttl_s
        self._cache: dict[str, tuple[float, Organization]] = {}  # by name
        self._by_key: dict[str, tuple[float, Organization]] = {}
        # the default agent pool an update leaves (`AgentPoolService.check_default`: required with the agent mode,
        # refused without it)
        self.check_default_agent_pool = check_default_agent_pool

    def lookup(self, name: str) -> Organization:
        """Read by name without a permission check: for services that check permissions themselves."""
        cached = self._cache.get(name)
        if cached is not None and time.monotonic() - cached[0] < self._cache_ttl_s:
            return cached[1]
        org = _org(self._item(name))
        self._cache[name] = self._by_key[org.key] = (time.monotonic(), org)
        return org

    def by_key(self, key: str) -> Organization:
        """Read by storage key (a workspace's or a token's `organization`), without a permission check."""
        cached = self._by_key.get(key)
        if cached is not None and time.monotonic() - cached[0] < self._cache_ttl_s:
            return cached[1]
        item = self._table.get(*_key(key))
        if item is None:
            raise NotFound("organization not found")
        org = _org(item)
        self._by_key[key] = (time.monotonic(), org)
        return org

    def name_of(self, key: str) -> str:
        """The current name of the organization stored under `key` (the key itself once it is gone)."""
        try:
            return self.by_key(key).name
        except NotFound:
            return key

    def _forget(self, org: Organization) -> None:
        self._cache.pop(org.name, None)
        self._by_key.pop(org.key, None)

    def forget(self, key: str) -> None:
        """Drop a cached organization (by storage key) after its owners changed (the owners team's service)."""
        self._by_key.pop(key, None)
        for name in [name for name, (_, org) in self._cache.items() if org.key == key]:
            self._cache.pop(name, None)

    def ensure_defaults(self, org: Organization) -> None:
        """Owners team, memberships and Default Project for an organization created before teams."""
        org_defaults.ensure(self._table, org.key, list(org.owners), {})

    def _item(self, name: str) -> dict[str, Any]:
        if not NAME_RE.match(name or ""):
            raise NotFound(f"organization {name} not found")
        claim = self._table.get(*_name_claim(name)) or self._table.get(*_exact_claim(name))
        item = self._table.get(*_key(claim["key"] if claim else name))
        if item is None or item["name"] != name:  # no claim: stored before claims existed, or renamed away
            raise NotFound(f"organization {name} not found")
        return item

    def get_by_key(self, principal: Principal, key: str, action: Action = Action.READ_ORGANIZATION) -> Organization:
        """As `get`, for what is stored under the organization's key (teams, memberships, projects, tokens)."""
        org = self.by_key(key)
        self._authz.require(principal, action, org.view)
        return org

    def get(self, principal: Principal, name: str, action: Action = Action.READ_ORGANIZATION) -> Organization:
        org = self.lookup(name)
        try:
            self._authz.require(principal, action, org.view)
        except NotFound as exc:  # hidden answers as absent, in the same words
            raise NotFound(f"organization {name} not found") from exc
        return org

    def list(self, principal: Principal) -> list[Organization]:
        orgs = [_org(item) for item in self._table.query("orgs", index="gsi1")]
        return [org for org in orgs if self._authz.can(principal, Action.READ_ORGANIZATION, org.view)]

    def all(self) -> builtins.list[Organization]:
        """Every organization, without a permission check (the site admin API checks first)."""
        return [_org(item) for item in self._table.query("orgs", index="gsi1")]

    def set_settings(self, name: str, values: dict[str, Any]) -> Organization:
        """Operator path (the site admin API, which checks first): store settings an owner cannot change."""
        item = self._item(name)
        item.setdefault("settings", {}).update(values)
        version = item["version"]
        item["version"] = version + 1
        try:
            self._table.put(item, if_version=version)
        except ConditionFailed as exc:
            raise Conflict("organization changed concurrently; retry") from exc
        org = _org(item)
        self._forget(org)
        return org

    def create(self, principal: Principal, name: str, email: str, **settings: Any) -> Organization:
        if principal.kind is not PrincipalKind.USER:
            raise NotFound("only users can create organizations")
        check_name(name)
        email = check_email(email)
        mode = settings.pop("default-execution-mode", "remote")
        check_mode(mode)
        settings = {key: check_setting(key, value) for key, value in settings.items()}
        org_id = new_id("org")
        self._refuse_taken(name, None)
        legacy = self._table.get(*_key(name))
        key = name if legacy is None else org_id  # the name is some renamed organization's key
        pk, sk = _key(key)
        item = {
            "pk": pk,
            "sk": sk,
            "id": org_id,
            "key": key,
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
        claim = {"pk": _name_claim(name)[0], "sk": _name_claim(name)[1], "key": key}
        seeded = org_defaults.creation_items(key, principal.subject_id, "")  # owners team, membership, project
        try:
            self._table.transact(
                [Put(claim, if_absent=True), Put(item, if_absent=True), *(Put(i, if_absent=True) for i in seeded)]
            )
        except ConditionFailed as exc:
            raise Conflict(f"organization {name} already exists") from exc
        return _org(item)

    def _refuse_taken(self, name: str, own_key: str | None) -> None:
        """A name another organization holds in any case is taken. Its claim says so for names claimed since
        names are unique whatever their case; older organizations are found by name (creations are rare)."""
        claim = self._table.get(*_name_claim(name))
        taken = claim is not None and claim["key"] != own_key
        if taken and claim is not None and claim.get("released_at"):
            raise Conflict(
                f"organization name {name} was another organization's and stays reserved (tokens signed for "
                "it name it)",
                meta={"pointer": "/data/attributes/name"},
            )
        if not taken:
            lowered = name.lower()
            taken = any(i["name"].lower() == lowered and _org(i).key != own_key
                        for i in self._table.query("orgs", index="gsi1"))  # fmt: skip
        if not taken:
            legacy = self._table.get(*_key(name))  # stored before name claims existed
            taken = legacy is not None and legacy["name"] == name and _org(legacy).key != own_key
        if taken:
            raise Conflict(f"organization {name} already exists", meta={"pointer": "/data/attributes/name"})

    def update(self, principal: Principal, name: str, changes: dict[str, Any]) -> Organization:
        item = self._item(name)
        self._authz.require(principal, Action.MANAGE_ORGANIZATION, _org(item).view)
        old_name = item["name"]
        new_name = changes.get("name", old_name)
        check_name(new_name)
        # other attributes (read-only ones, unknown ones) are ignored, as TFC does
        if "email" in changes:
            item["email"] = check_email(changes["email"])
        if "default-execution-mode" in changes:
            check_mode(changes["default-execution-mode"])
            item["default_execution_mode"] = changes["default-execution-mode"]
        for key in ("session-timeout", "session-remember", "collaborator-auth-policy", *BOOLEAN_SETTINGS):
            if key in changes:
                item.setdefault("settings", {})[key] = check_setting(key, changes[key])
        if DEFAULT_AGENT_POOL in changes or "default-execution-mode" in changes:
            self._default_agent_pool(item, changes)
        before = _org(item)
        version = item["version"]
        item["version"] = version + 1
        item["name"] = item["gsi1sk"] = new_name
        ops: list[WriteOp] = [Put(item, if_version=version)]
        if "assessments-enforced" in changes:  # the assessment schedule's entry of the whole organization
            enforced = item["settings"]["assessments-enforced"]
            pk, sk = assessments.organization_key(before.key)
            ops += [Put({"pk": pk, "sk": sk, "organization": before.key})] if enforced else [Delete(pk, sk)]
        if new_name != old_name:
            claim = {"pk": _name_claim(new_name)[0], "sk": _name_claim(new_name)[1], "key": before.key}
            self._refuse_taken(new_name, before.key)
            # its own claim already: only the case changes, or it takes back a name it released
            held = self._table.get(*_name_claim(new_name))
            own = _name_claim(new_name) == _name_claim(old_name) or (held is not None and held["key"] == before.key)
            ops += [Put(claim) if own else Put(claim, if_absent=True)]
            if _name_claim(new_name) != _name_claim(old_name):
                # the old name stays this organization's: workload identity tokens signed under it carry it in
                # their `sub`, which a later organization of that name must never receive
                ops += [Put({**claim, "pk": _name_claim(old_name)[0], "released_at": clock.now_iso()})]
            ops += [Delete(*_exact_claim(old_name))] if _exact_claim(old_name) != _name_claim(old_name) else []
        try:
            self._table.transact(ops)
        except ConditionFailed as exc:
            raise Conflict(f"organization {new_name} already exists, or {old_name} changed meanwhile; retry") from exc
        finally:
            self._forget(before)
        return _org(item)

    def _default_agent_pool(self, item: dict[str, Any], changes: dict[str, Any]) -> None:
        """The default agent pool goes with the agent execution mode: kept while the mode stays `agent`."""
        settings = item.setdefault("settings", {})
        mode = item.get("default_execution_mode", "remote")
        wanted = changes.get(DEFAULT_AGENT_POOL, settings.get(DEFAULT_AGENT_POOL) if mode == "agent" else None)
        wanted = self.check_default_agent_pool(_org(item), mode, wanted)
        if wanted:
            settings[DEFAULT_AGENT_POOL] = wanted
        else:
            settings.pop(DEFAULT_AGENT_POOL, None)

    def delete(self, principal: Principal, org: Organization) -> None:
        """Remove the organization item, its name claim, teams, memberships and projects (what it held is deleted
        first: `OrganizationDeletion`)."""
        self._authz.require(principal, Action.DELETE_ORGANIZATION, org.view)
        try:
            legacy = [Delete(*_exact_claim(org.name))] if _exact_claim(org.name) != _name_claim(org.name) else []
            self._table.transact([Delete(*_key(org.key)), Delete(*_name_claim(org.name)), *legacy])
            org_defaults.remove_all(self._table, org.key)
        finally:
            self._forget(org)

    def add_owner(self, name: str, user_id: str) -> Organization:
        """Operator path (CLI/bootstrap): make a user an owner of an organization (and of its owners team)."""
        item = self._item(name)
        key = _org(item).key
        org_defaults.ensure(self._table, key, list(item["owners"]), {})
        if user_id not in item["owners"]:
            item["owners"].append(user_id)
            version = item["version"]
            item["version"] = version + 1
            team = org_defaults.owners_team(self._table, key)
            team["users"] = sorted(set(team["users"]) | {user_id})
            team_version = team["version"]
            team["version"] = team_version + 1
            self._table.transact([Put(item, if_version=version), Put(team, if_version=team_version)])
            self._forget(_org(item))
        org_defaults.ensure(self._table, key, list(item["owners"]), {})
        return _org(item)
