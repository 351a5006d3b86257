"""Organizations: the tenant boundary. Names are the public keys, as in HCP Terraform.

Storage keys everything of an organization (its workspaces, job queue, tokens, index items) by its `key`:
the name it was created with. A name claim `orgname#<name>` points at the key, so a rename is one
transaction (new claim, old claim gone, the organization item's name changed) and nothing else moves: the
old name is 404 at once, the workspaces, state, runs and tokens keep working. An organization created
under a name still used as another's key gets its external id as key.
"""

from __future__ import annotations

import builtins
import dataclasses
import time
from collections.abc import Callable
from typing import Any

from terrace.domain import clock
from terrace.domain.agent_pools import DEFAULT_POOL_SETTING as DEFAULT_AGENT_POOL
from terrace.domain.errors import Forbidden, Invalid, NotFound
from terrace.domain.ids import new_id
from terrace.domain.organizations import (
    BOOLEAN_SETTINGS,
    Organization,
    check_email,
    check_mode,
    check_name,
    check_setting,
)
from terrace.domain.principal import Principal, PrincipalKind
from terrace.services.access.authz import Action, Authorizer
from terrace.services.access.store_organizations import OrganizationStore

# the workspaces area's agent pools (`AgentPoolBindings.check_default`): the default pool an update leaves
DefaultPoolCheck = Callable[[Organization, str, str | None], str | None]


class OrganizationService:
    # Organizations are read on nearly every request (permissions depend on them) and change rarely:
    # reads are cached per process for a short time. Changes made here take effect at once in this
    # process and within `cache_ttl_s` elsewhere.
    def __init__(
        self,
        store: OrganizationStore,
        authz: Authorizer,
        *,
        check_default_agent_pool: DefaultPoolCheck,
        creation_limited: Callable[[], bool] = lambda: False,
        cost_estimation_available: Callable[[], bool] = lambda: True,
        hyok_available: Callable[[str], bool] = lambda _org: False,
        cache_ttl_s: float = 2.0,
    ) -> None:
        self._creation_limited = creation_limited  # the site admin's limit-user-organization-creation
        # the site admin's cost estimation switch: off, no organization estimates costs, and each reads so (as TFE)
        self._cost_estimation_available = cost_estimation_available
        # an organization has an available primary HYOK configuration (HyokStateKeys.has_available)
        self._hyok_available = hyok_available
        self._store = store
        self._authz = authz
        self._cache_ttl_s = cache_ttl_s
        self._cache: dict[str, tuple[float, Organization]] = {}  # by name
        self._by_key: dict[str, tuple[float, Organization]] = {}
        # the default agent pool an update leaves (`AgentPoolBindings.check_default`: required with the agent mode,
        # refused without it)
        self.check_default_agent_pool = check_default_agent_pool

    def lookup(self, name: str) -> Organization:
        """Read by name without a permission check: for services that check permissions themselves."""
        cached = self._cache.get(name)
        if cached is not None and time.monotonic() - cached[0] < self._cache_ttl_s:
            return cached[1]
        org = self._store.record(name).org
        self._cache[name] = self._by_key[org.key] = (time.monotonic(), org)
        return org

    def by_key(self, key: str) -> Organization:
        """Read by storage key (a workspace's or a token's `organization`), without a permission check."""
        cached = self._by_key.get(key)
        if cached is not None and time.monotonic() - cached[0] < self._cache_ttl_s:
            return cached[1]
        org = self._store.by_key(key)
        if org is None:
            raise NotFound("organization not found")
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
        self._store.ensure_defaults(org.key, list(org.owners))

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
        return self._shown(org)

    def list(self, principal: Principal) -> list[Organization]:
        readable = self._store.all()
        settings = Action.READ_ORGANIZATION_SETTINGS
        return [self._shown(o) for o in readable if self._authz.can(principal, settings, o.view)]

    def settings(self, principal: Principal, name: str) -> Organization:
        """The organization's own record and settings (its members, its tokens and site auditors read them)."""
        return self.get(principal, name, Action.READ_ORGANIZATION_SETTINGS)

    def _shown(self, org: Organization) -> Organization:
        """`org` as its readers see it: without cost estimation while the site admin has it off."""
        if org.cost_estimation_enabled and not self._cost_estimation_available():
            return dataclasses.replace(org, settings={**org.settings, "cost-estimation-enabled": False})
        return org

    def all(self) -> builtins.list[Organization]:
        """Every organization, without a permission check (the site admin API checks first)."""
        return self._store.all()

    def set_settings(self, name: str, values: dict[str, Any]) -> Organization:
        """Operator path (the site admin API, which checks first): store settings an owner cannot change."""
        org = self._store.set_settings(self._store.record(name), values)
        self._forget(org)
        return org

    def create(self, principal: Principal, name: str, email: str, **settings: Any) -> Organization:
        if principal.kind is not PrincipalKind.USER:
            raise NotFound("only users can create organizations")
        if not principal.site_admin and self._creation_limited():
            raise Forbidden("only site admins may create organizations here (admin/general-settings)")
        check_name(name)
        email = check_email(email)
        mode = settings.pop("default-execution-mode", "remote")
        check_mode(mode)
        settings = {key: check_setting(key, value) for key, value in settings.items()}
        self._store.refuse_taken(name, None)
        org = Organization(new_id("org"), name, name, email, clock.now_iso(), (principal.subject_id,), mode, settings)
        # with the owners team, the creator's membership and the Default Project; shown as its readers see it
        return self._shown(self._store.create(org))

    def update(self, principal: Principal, name: str, changes: dict[str, Any]) -> Organization:
        record = self._store.record(name)
        self._authz.require(principal, Action.MANAGE_ORGANIZATION, record.org.view)
        new_name = changes.get("name", record.org.name)
        check_name(new_name)
        # other attributes (read-only ones, unknown ones) are ignored, as TFC does
        if changes.get("enforce-hyok") is True and not self._hyok_available(record.org.key):
            raise Invalid(
                "enforce-hyok: the organization has no available primary HYOK configuration to encrypt with",
                pointer="/data/attributes/enforce-hyok",
            )
        stored: dict[str, Any] = {}
        if "email" in changes:
            stored["email"] = check_email(changes["email"])
        if "default-execution-mode" in changes:
            check_mode(changes["default-execution-mode"])
            stored["default_execution_mode"] = changes["default-execution-mode"]
        settings = dict(record.org.settings)
        for key in ("session-timeout", "session-remember", "collaborator-auth-policy", *BOOLEAN_SETTINGS):
            if key in changes:
                settings[key] = check_setting(key, changes[key])
                stored["settings"] = settings
        if DEFAULT_AGENT_POOL in changes or "default-execution-mode" in changes:
            stored["settings"] = settings
            self._default_agent_pool(dataclasses.replace(record.org, **stored), settings, changes)
        enforced = bool(settings["assessments-enforced"]) if "assessments-enforced" in changes else None
        try:
            return self._shown(self._store.update(record, new_name, stored, enforced))
        finally:
            self._forget(record.org)

    def _default_agent_pool(self, org: Organization, settings: dict[str, Any], changes: dict[str, Any]) -> None:
        """The default agent pool goes with the agent execution mode: kept while the mode stays `agent`."""
        mode = org.default_execution_mode
        wanted = changes.get(DEFAULT_AGENT_POOL, settings.get(DEFAULT_AGENT_POOL) if mode == "agent" else None)
        wanted = self.check_default_agent_pool(org, mode, wanted)
        if wanted:
            settings[DEFAULT_AGENT_POOL] = wanted
        else:
            settings.pop(DEFAULT_AGENT_POOL, None)

    def delete(self, principal: Principal, org: Organization) -> None:
        """Remove the organization item, its name claim, teams, memberships and projects (what it held is deleted
        first: `OrganizationDeletion`)."""
        self._authz.require(principal, Action.DELETE_ORGANIZATION, org.view)
        try:
            self._store.delete(org)
        finally:
            self._forget(org)

    def add_owner(self, name: str, user_id: str) -> Organization:
        """Operator path (CLI/bootstrap): make a user an owner of an organization (and of its owners team)."""
        record = self._store.record(name)
        org = record.org
        self._store.ensure_defaults(org.key, list(org.owners))
        if user_id not in org.owners:
            org = self._store.add_owner(record, user_id)
            self._forget(org)
        self._store.ensure_defaults(org.key, list(org.owners))
        return org
