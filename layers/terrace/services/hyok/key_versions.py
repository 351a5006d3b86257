"""Customer key versions (`/hyok-configurations/:id/hyok-customer-key-versions`, `/hyok-customer-key-versions/:id`)
and encrypted data keys (`/hyok-encrypted-data-keys/:id`). Revoking a key version makes every data key it wrapped
unusable: `open` refuses to unwrap it, with a clear error, whatever the customer's key would still do. Members read;
managers revoke and delete (a revoked version only)."""

from __future__ import annotations

import builtins

from terrace.adapters.key_wrapper import KeyUnavailable, KeyWrapper
from terrace.domain import hyok as model
from terrace.domain.errors import Conflict, NotFound
from terrace.domain.principal import Principal
from terrace.services.access.authz import Action
from terrace.services.access.organizations import OrganizationService
from terrace.services.hyok.configurations import HyokConfigurationService
from terrace.services.hyok.key_test import KeyTester
from terrace.services.hyok.store import HyokStore
from terrace.services.optimistic import optimistic


class KeyVersionService:
    def __init__(
        self,
        store: HyokStore,
        organizations: OrganizationService,
        configurations: HyokConfigurationService,
        tester: KeyTester,
        wrapper: KeyWrapper,
    ) -> None:
        self._store, self._orgs, self._configurations = store, organizations, configurations
        self._tester, self._wrapper = tester, wrapper

    def list(self, principal: Principal, hyok_id: str) -> builtins.list[model.KeyVersion]:
        hyok = self._configurations.get(principal, hyok_id)
        return self._store.key_versions_of(hyok.id)

    def get(
        self, principal: Principal, key_version_id: str, action: Action = Action.READ_ORGANIZATION
    ) -> model.KeyVersion:
        key = self._store.key_version(key_version_id)
        try:
            if key is not None:
                self._orgs.get_by_key(principal, key.organization, action)
        except NotFound:
            key = None
        if key is None:
            raise NotFound(f"HYOK customer key version {key_version_id} not found")
        return key

    def data_key_ids(self, key: model.KeyVersion) -> builtins.list[str]:
        """The data keys a version got through this service wrapped."""
        return [d.id for d in self._store.data_keys_of(key.id)]

    def revoke(self, principal: Principal, key_version_id: str) -> model.KeyVersion:
        def step() -> model.KeyVersion:
            key = self.get(principal, key_version_id, Action.MANAGE_ORGANIZATION)
            model.check_key_version_revocable(key)
            key.status = model.KEY_REVOKED
            self._store.replace(key)
            return key

        return optimistic(step, exhausted=f"key version {key_version_id} keeps changing; retry")

    def delete(self, principal: Principal, key_version_id: str) -> None:
        key = self.get(principal, key_version_id, Action.MANAGE_ORGANIZATION)
        model.check_key_version_deletable(key)
        for data_key in self._store.data_keys_of(key.id):
            self._store.delete(data_key)
        self._store.delete(key)

    def data_key(self, principal: Principal, data_key_id: str) -> model.EncryptedDataKey:
        found = self._store.data_key(data_key_id)
        try:
            if found is not None:
                self._orgs.get_by_key(principal, found.organization)
        except NotFound:
            found = None
        if found is None:
            raise NotFound(f"HYOK encrypted data key {data_key_id} not found")
        return found

    def open(self, data_key_id: str) -> bytes:
        """The plaintext of a data key, for the one that works with what it encrypts (no principal: its caller
        decided). Conflict when its key version is revoked or the customer's key refuses."""
        data_key = self._store.data_key(data_key_id)
        key = self._store.key_version(data_key.key_version_id) if data_key else None
        hyok = self._store.hyok(key.hyok_configuration_id) if key else None
        if data_key is None or key is None or hyok is None:
            raise NotFound(f"HYOK encrypted data key {data_key_id} not found")
        if not key.usable:
            raise Conflict(
                f"data key {data_key_id} was wrapped by customer key version {key.key_version}, which is {key.status}:"
                " what it encrypts can no longer be decrypted"
            )
        try:
            return self._wrapper.unwrap(self._tester.customer_key(hyok), data_key.encrypted_dek, data_key.context)
        except KeyUnavailable as exc:
            raise Conflict(f"the customer's key refused to unwrap data key {data_key_id}: {exc}") from exc
