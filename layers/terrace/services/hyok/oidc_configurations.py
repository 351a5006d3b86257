"""An organization's OIDC configurations (`/organizations/:org/oidc-configurations`, `/oidc-configurations/:id`):
how the customer's cloud trusts Terrace's workload identity tokens (an AWS role, an Azure app, a GCP service
account, a Vault role). Members read them; who may manage the organization creates, changes and deletes them. A
configuration a HYOK configuration refers to cannot be deleted."""

from __future__ import annotations

import builtins
from typing import Any

from terrace.domain import clock
from terrace.domain import hyok as model
from terrace.domain.errors import Conflict, Invalid, NotFound
from terrace.domain.ids import new_id
from terrace.domain.principal import Principal
from terrace.services.access.authz import Action
from terrace.services.access.organizations import OrganizationService
from terrace.services.hyok.store import HyokStore
from terrace.services.optimistic import optimistic


class OidcConfigurationService:
    def __init__(self, store: HyokStore, organizations: OrganizationService) -> None:
        self._store, self._orgs = store, organizations

    def create(
        self, principal: Principal, organization: str, kind_type: str, attrs: dict[str, Any]
    ) -> model.OidcConfiguration:
        org = self._orgs.get(principal, organization, Action.MANAGE_ORGANIZATION)
        kind = model.BY_TYPE.get(kind_type)
        if kind is None:
            known = ", ".join(sorted(model.BY_TYPE))
            raise Invalid(f"type must be one of {known}", pointer="/data/type")
        oidc = model.OidcConfiguration(
            id=new_id(kind.prefix),
            organization=org.key,
            kind=kind.kind,
            attributes=model.oidc_attributes(kind, attrs),
            created_at=clock.now_iso(),
        )
        self._store.create(oidc)
        return oidc

    def get(
        self, principal: Principal, oidc_id: str, action: Action = Action.READ_ORGANIZATION
    ) -> model.OidcConfiguration:
        oidc = self._store.oidc(oidc_id)
        try:
            if oidc is not None:
                self._orgs.get_by_key(principal, oidc.organization, action)
        except NotFound:
            oidc = None
        if oidc is None:
            raise NotFound(f"OIDC configuration {oidc_id} not found")
        return oidc

    def organization_name(self, oidc: model.OidcConfiguration) -> str:
        return self._orgs.name_of(oidc.organization)

    def load(self, oidc_id: str, organization: str) -> model.OidcConfiguration | None:
        """The configuration when it is `organization`'s (no check: the caller checked the organization)."""
        oidc = self._store.oidc(oidc_id)
        return oidc if oidc is not None and oidc.organization == organization else None

    def list(self, principal: Principal, organization: str) -> builtins.list[model.OidcConfiguration]:
        org = self._orgs.get(principal, organization)
        return self._store.oidcs_of(org.key)

    def update(
        self, principal: Principal, oidc_id: str, kind_type: str | None, attrs: dict[str, Any]
    ) -> model.OidcConfiguration:
        def step() -> model.OidcConfiguration:
            oidc = self.get(principal, oidc_id, Action.MANAGE_ORGANIZATION)
            kind = model.OIDC_KINDS[oidc.kind]
            if kind_type is not None and kind_type != kind.type:
                raise Conflict(f"{oidc_id} is an {kind.type[:-1]}, not an {kind_type[:-1]}")
            oidc.attributes = model.oidc_attributes(kind, attrs, oidc.attributes)
            self._store.replace(oidc)
            return oidc

        return optimistic(step, exhausted=f"OIDC configuration {oidc_id} keeps changing; retry")

    def delete(self, principal: Principal, oidc_id: str) -> None:
        oidc = self.get(principal, oidc_id, Action.MANAGE_ORGANIZATION)
        users = [h.name for h in self._store.hyoks_of(oidc.organization) if h.oidc_configuration_id == oidc.id]
        if users:
            raise Conflict(f"OIDC configuration {oidc_id} is used by HYOK configuration {users[0]}: delete it first")
        self._store.delete(oidc)
