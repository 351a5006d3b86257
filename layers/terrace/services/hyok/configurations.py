"""An organization's HYOK configurations (`/organizations/:org/hyok-configurations`, `/hyok-configurations/:id`):
a customer's key-encryption key, the OIDC configuration that reaches it and the agent pool whose agents run the
workspaces it secures. A new configuration is `untested` until its test (`key_test.py`, requested through the
events queue when it is created, staged in the outbox with its write, or run at once by `POST .../actions/test`)
wraps a data key with the key. Revoking
it revokes every customer key version it has (their data keys become unusable); only a configuration that
secures nothing (untested, failed, errored or revoked) may be deleted. Members read, managers write."""

from __future__ import annotations

import builtins
import dataclasses
from collections.abc import Callable
from typing import Any

from terrace.domain import clock
from terrace.domain import hyok as model
from terrace.domain.errors import Forbidden, Invalid, NotFound, Unauthenticated
from terrace.domain.ids import new_id
from terrace.domain.limits import TEXT_ATTRIBUTE_MAX, text
from terrace.domain.principal import Principal
from terrace.services.access.authz import Action
from terrace.services.access.organizations import OrganizationService
from terrace.services.hyok.key_test import requested
from terrace.services.hyok.oidc_configurations import OidcConfigurationService
from terrace.services.hyok.store import HyokStore
from terrace.services.optimistic import optimistic
from terrace.services.outbox_relay import OutboxRelay
from terrace.services.workspaces.agent_pools import AgentPoolService

NAME_MAX = 128


class HyokConfigurationService:
    def __init__(
        self,
        store: HyokStore,
        organizations: OrganizationService,
        oidc_configurations: OidcConfigurationService,
        agent_pools: AgentPoolService,
        relay: OutboxRelay,
        run_test: Callable[[str], model.HyokConfiguration | None],
    ) -> None:
        """`relay`: publishes a configuration's queued test (the events queue); `run_test`: test it now
        (`key_test.py`)."""
        self._store, self._orgs, self._oidcs, self._pools = store, organizations, oidc_configurations, agent_pools
        self._relay, self._run_test = relay, run_test

    def get(
        self, principal: Principal, hyok_id: str, action: Action = Action.READ_ORGANIZATION
    ) -> model.HyokConfiguration:
        hyok = self._store.hyok(hyok_id)
        try:
            if hyok is not None:
                self._orgs.get_by_key(principal, hyok.organization, action)
        except NotFound:
            hyok = None
        if hyok is None:
            raise NotFound(f"HYOK configuration {hyok_id} not found")
        return hyok

    def list(
        self, principal: Principal, organization: str, query: str | None = None
    ) -> builtins.list[model.HyokConfiguration]:
        org = self._orgs.get(principal, organization)
        found = self._store.hyoks_of(org.key)
        return [h for h in found if query.lower() in h.name.lower()] if query else found

    def of_pool(self, principal: Principal, organization: str, pool_id: str) -> builtins.list[model.HyokConfiguration]:
        """The configurations whose agents are the pool's (`organization`: the pool's organization key)."""
        self._orgs.get_by_key(principal, organization)
        return [h for h in self._store.hyoks_of(organization) if h.agent_pool_id == pool_id]

    def primary_id(self, principal: Principal, organization: str) -> str | None:
        """The id of the organization's primary configuration (`organization`: its key), if it has one and the
        caller reads the organization (not a user whose answer turned the organization's user tokens off)."""
        try:
            self._orgs.get_by_key(principal, organization)
        except (NotFound, Forbidden, Unauthenticated):
            return None
        return next((h.id for h in self._store.hyoks_of(organization) if h.primary), None)

    def details(self, hyok: model.HyokConfiguration) -> tuple[str, builtins.list[model.KeyVersion]]:
        """The organization's name and the key versions of a configuration got through this service."""
        return self._orgs.name_of(hyok.organization), self._store.key_versions_of(hyok.id)

    def oidc_of(self, hyok: model.HyokConfiguration) -> model.OidcConfiguration | None:
        return self._oidcs.load(hyok.oidc_configuration_id, hyok.organization)

    def create(
        self, principal: Principal, organization: str, attrs: dict[str, Any], oidc_id: str | None, pool_id: str | None
    ) -> model.HyokConfiguration:
        org = self._orgs.get(principal, organization, Action.MANAGE_ORGANIZATION)
        name = self._name(org.key, attrs.get("name"))
        kek_id = model.required_text(attrs, "kek-id")
        if not oidc_id:
            raise Invalid(
                "oidc-configuration is required for a HYOK configuration",
                pointer="/data/relationships/oidc-configuration",
            )
        oidc = self._oidcs.load(oidc_id, org.key)
        if oidc is None:
            raise NotFound(f"OIDC configuration {oidc_id} not found")
        pool = self._pool(org.key, pool_id)
        hyok = model.HyokConfiguration(
            id=new_id("hyokc"),
            organization=org.key,
            name=name,
            kek_id=kek_id,
            kms_options=model.kms_options(model.OIDC_KINDS[oidc.kind], attrs.get("kms-options")),
            oidc_configuration_id=oidc.id,
            agent_pool_id=pool,
            created_at=clock.now_iso(),
            primary=not self._store.hyoks_of(org.key),  # an organization's first is its primary
        )
        entry, staged = self._relay.outbox.stage(requested(hyok.id))
        self._store.create(hyok, staged)
        self._relay.deliver([entry])  # a failed publish stays staged for the reaper's sweep
        return hyok

    def update(
        self, principal: Principal, hyok_id: str, attrs: dict[str, Any], pool_id: str | None
    ) -> model.HyokConfiguration:
        retest, entries = False, []

        def step() -> model.HyokConfiguration:
            nonlocal retest, entries
            hyok = self.get(principal, hyok_id, Action.MANAGE_ORGANIZATION)
            if hyok.status in (model.REVOKING, model.REVOKED):
                raise Invalid(f"HYOK configuration {hyok_id} is {hyok.status}: it cannot change")
            retest = False
            if attrs.get("name") is not None and attrs["name"] != hyok.name:
                hyok.name = self._name(hyok.organization, attrs["name"])
            if attrs.get("kek-id") is not None and attrs["kek-id"] != hyok.kek_id:
                hyok.kek_id, retest = model.required_text(attrs, "kek-id"), True
            if attrs.get("kms-options") is not None:
                options = model.kms_options(hyok.oidc_kind, attrs["kms-options"], hyok.kms_options)
                hyok.kms_options, retest = options, retest or options != hyok.kms_options
            if pool_id is not None:
                hyok.agent_pool_id = self._pool(hyok.organization, pool_id)
            if attrs.get("primary") is True and not hyok.primary:
                self._demote_primary(hyok.organization)
                hyok.primary = True
            staged = None
            if retest:
                hyok.status, hyok.error = model.UNTESTED, None
                entry, staged = self._relay.outbox.stage(requested(hyok.id))
                entries = [entry]
            self._store.replace(hyok, staged)
            return hyok

        updated = optimistic(step, exhausted=f"HYOK configuration {hyok_id} keeps changing; retry")
        if retest:
            self._relay.deliver(entries)
        return updated

    def revoke(self, principal: Principal, hyok_id: str) -> model.HyokConfiguration:
        """Every key version first (none of their data keys opens from then on), then the configuration."""
        hyok = self.get(principal, hyok_id, Action.MANAGE_ORGANIZATION)
        if hyok.status == model.REVOKED:
            return hyok
        model.revoke(dataclasses.replace(hyok))  # refused before anything changes when it cannot be revoked
        for key in self._store.key_versions_of(hyok.id):
            self._revoke_key_version(key.id)

        def step() -> model.HyokConfiguration:
            current = self.get(principal, hyok_id, Action.MANAGE_ORGANIZATION)
            model.revoke(current)
            self._store.replace(current)
            return current

        return optimistic(step, exhausted=f"HYOK configuration {hyok_id} keeps changing; retry")

    def _revoke_key_version(self, key_version_id: str) -> None:
        def step() -> None:
            key = self._store.key_version(key_version_id)
            if key is not None and key.status != model.KEY_REVOKED:
                key.status = model.KEY_REVOKED
                self._store.replace(key)

        optimistic(step, exhausted=f"key version {key_version_id} keeps changing; retry")

    def test(self, principal: Principal, hyok_id: str) -> model.HyokConfiguration:
        """Tests the key now; Invalid with the key service's reason when it fails."""
        hyok = self.get(principal, hyok_id, Action.MANAGE_ORGANIZATION)
        if hyok.status in (model.REVOKING, model.REVOKED):
            raise Invalid(f"HYOK configuration {hyok_id} is {hyok.status}: it cannot be tested")
        tested = self._run_test(hyok.id) or hyok
        if tested.status != model.AVAILABLE:
            raise Invalid(f"the test of HYOK configuration {tested.name} failed: {tested.error}")
        return tested

    def delete(self, principal: Principal, hyok_id: str) -> None:
        hyok = self.get(principal, hyok_id, Action.MANAGE_ORGANIZATION)
        model.check_deletable(hyok)
        for key in self._store.key_versions_of(hyok.id):
            for data_key in self._store.data_keys_of(key.id):
                self._store.delete(data_key)
            self._store.delete(key)
        self._store.delete(hyok)

    def _name(self, organization: str, raw: Any) -> str:
        name = text(raw or "", "name", NAME_MAX).strip()
        if not name:
            raise Invalid("name is required for a HYOK configuration", pointer="/data/attributes/name")
        if any(h.name == name for h in self._store.hyoks_of(organization)):
            raise Invalid("name has already been taken", pointer="/data/attributes/name")
        return name

    def _pool(self, organization: str, pool_id: str | None) -> str:
        if not pool_id:
            raise Invalid("agent-pool is required for a HYOK configuration", pointer="/data/relationships/agent-pool")
        text(pool_id, "agent-pool", TEXT_ATTRIBUTE_MAX, pointer_base="/data/relationships")
        if self._pools.load(pool_id, organization) is None:
            raise NotFound(f"agent pool {pool_id} not found")
        return pool_id

    def _demote_primary(self, organization: str) -> None:
        for other in self._store.hyoks_of(organization):
            if other.primary:
                self._demote(other.id)

    def _demote(self, hyok_id: str) -> None:
        def step() -> None:
            hyok = self._store.hyok(hyok_id)
            if hyok is not None and hyok.primary:
                hyok.primary = False
                self._store.replace(hyok)

        optimistic(step, exhausted=f"HYOK configuration {hyok_id} keeps changing; retry")
