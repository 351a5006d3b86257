"""Reserved tag keys (`/organizations/:org/reserved-tag-keys`, `/reserved-tag-keys/:id`): the tag keys an
organization reserves. With `disable-overrides`, a key a project binds is locked for the project's workspaces: a
workspace may not bind it to another value (`locked_keys`, checked by `WorkspaceService` whenever a workspace's
bindings change). Managed by who may manage the organization; read by its members."""

from __future__ import annotations

import dataclasses
from typing import Any

from terrace.domain import clock
from terrace.domain.errors import Invalid, NotFound
from terrace.domain.ids import looks_like, new_id
from terrace.domain.principal import Principal
from terrace.domain.tags import ReservedTagKey, check_reserved_key
from terrace.services.access.authz import Action
from terrace.services.access.organizations import OrganizationService
from terrace.services.workspaces.store_tags import ReservedTagKeyStore

TAKEN = "Key has already been taken"


def _overrides(attrs: dict[str, Any], current: bool) -> bool:
    value = attrs.get("disable-overrides", current)
    if value is None:
        return current
    if not isinstance(value, bool):
        raise Invalid("disable-overrides must be true or false", pointer="/data/attributes/disable-overrides")
    return value


class ReservedTagKeyService:
    def __init__(self, store: ReservedTagKeyStore, organizations: OrganizationService) -> None:
        self._store = store
        self._orgs = organizations

    def list(self, principal: Principal, organization: str) -> list[ReservedTagKey]:
        org = self._orgs.get(principal, organization, Action.READ_ORGANIZATION)
        return self._store.of_organization(org.key)

    def create(self, principal: Principal, organization: str, attrs: dict[str, Any]) -> ReservedTagKey:
        org = self._orgs.get(principal, organization, Action.MANAGE_ORGANIZATION)
        now = clock.now_iso()
        rtk = ReservedTagKey(new_id("rtk"), org.key, check_reserved_key(attrs.get("key")), _overrides(attrs, False),
                             now, now)  # fmt: skip
        if not self._store.create(rtk):
            raise Invalid(TAKEN, pointer="/data/attributes/key")
        return rtk

    def get(self, principal: Principal, rtk_id: str, action: Action = Action.READ_ORGANIZATION) -> ReservedTagKey:
        rtk = self._store.find(rtk_id) if looks_like(rtk_id, "rtk") else None
        if rtk is None:
            raise NotFound(f"reserved tag key {rtk_id} not found")
        try:
            self._orgs.get_by_key(principal, rtk.organization, Action.READ_ORGANIZATION)
        except NotFound as exc:
            raise NotFound(f"reserved tag key {rtk_id} not found") from exc
        if action is not Action.READ_ORGANIZATION:
            self._orgs.get_by_key(principal, rtk.organization, action)
        return rtk

    def update(self, principal: Principal, rtk_id: str, attrs: dict[str, Any]) -> ReservedTagKey:
        current = self.get(principal, rtk_id, Action.MANAGE_ORGANIZATION)
        key = check_reserved_key(attrs["key"]) if attrs.get("key") is not None else current.key
        updated = dataclasses.replace(current, key=key, disable_overrides=_overrides(attrs, current.disable_overrides),
                                      updated_at=clock.now_iso())  # fmt: skip
        if not self._store.replace(current, updated):
            taken = key != current.key and any(r.key == key for r in self._store.of_organization(current.organization))
            raise Invalid(TAKEN if taken else "the reserved tag key changed; retry", pointer="/data/attributes/key")
        return dataclasses.replace(updated, version=current.version + 1)

    def delete(self, principal: Principal, rtk_id: str) -> None:
        self._store.delete(self.get(principal, rtk_id, Action.MANAGE_ORGANIZATION))

    def locked_keys(self, org_key: str) -> set[str]:
        """The keys a workspace may not override (no permission check: the binding rule's)."""
        return {r.key for r in self._store.of_organization(org_key) if r.disable_overrides}
