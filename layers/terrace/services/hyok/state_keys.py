"""The data keys of Hold Your Own Key state versions (the state area's port `services/state/hyok_state.HyokKeys`,
filled by the composition root): an agent's wrapped data key is recorded as an encrypted data key of the
organization's primary HYOK configuration, under the customer key version that wrapped it (a version the key
service reports for the first time, after a rotation, is recorded then). `record` returns the writes without doing
them: they go in the transaction that stores what the data key encrypts, so a refused write leaves no data key
behind. A revoked version takes no new data key, and what its data keys encrypted is no longer served
(`check_readable`)."""

from __future__ import annotations

import dataclasses

from terrace.domain import clock
from terrace.domain import hyok as model
from terrace.domain.errors import Conflict, Invalid, NotFound
from terrace.domain.ids import new_id
from terrace.domain.workspace import Workspace
from terrace.services.hyok.store import HyokStore, WriteOp


class HyokStateKeys:
    def __init__(self, store: HyokStore) -> None:
        self._store = store

    def primary(self, organization: str) -> model.HyokConfiguration:
        """The organization's primary HYOK configuration, when it is available; Conflict naming why not."""
        found = [h for h in self._store.hyoks_of(organization) if h.primary]
        if not found:
            raise Conflict("the organization has no primary HYOK configuration: nothing can encrypt its state")
        if found[0].status != model.AVAILABLE:
            raise Conflict(f"the primary HYOK configuration {found[0].name} is {found[0].status}, not available")
        return found[0]

    def secure_workspace(self, ws: Workspace) -> Workspace:
        """A workspace with `hyok-enabled`: its runs go to the agents of the primary HYOK configuration's pool (422
        when the organization has no available configuration, or the workspace names another pool)."""
        try:
            hyok = self.primary(ws.organization)
        except Conflict as exc:
            raise Invalid(f"hyok-enabled: {exc.detail}", pointer="/data/attributes/hyok-enabled") from exc
        if ws.agent_pool_id and ws.agent_pool_id != hyok.agent_pool_id:
            raise Invalid(
                f"hyok-enabled: the runs of a HYOK workspace go to the agent pool of HYOK configuration {hyok.name}, "
                f"not {ws.agent_pool_id}",
                pointer="/data/attributes/hyok-enabled",
            )
        return dataclasses.replace(
            ws, execution_mode="agent", execution_mode_overwritten=True, agent_pool_id=hyok.agent_pool_id
        )

    def has_available(self, organization: str) -> bool:
        try:
            self.primary(organization)
        except Conflict:
            return False
        return True

    def record(
        self, organization: str, workspace_id: str, encrypted_dek: str, key_version: str, context: dict[str, str]
    ) -> tuple[str, list[WriteOp]]:
        hyok = self.primary(organization)
        version, ops = self._key_version(hyok, key_version)
        data_key = model.EncryptedDataKey(
            id=new_id("dek"),
            organization=organization,
            key_version_id=version.id,
            customer_key_name=hyok.kek_id,
            encrypted_dek=encrypted_dek,
            created_at=clock.now_iso(),
            context=dict(context),
        )
        return data_key.id, [*ops, self._store.create_op(data_key)]

    def _key_version(self, hyok: model.HyokConfiguration, key_version: str) -> tuple[model.KeyVersion, list[WriteOp]]:
        """The usable version the key service named, and the write recording it when it is new (a rotation)."""
        known = [k for k in self._store.key_versions_of(hyok.id) if k.key_version == key_version]
        if any(k.usable for k in known):
            return next(k for k in known if k.usable), []
        if known:
            raise Conflict(f"customer key version {key_version} is {known[0].status}: it encrypts nothing new")
        created = model.KeyVersion(
            id=new_id("keyv"),
            organization=hyok.organization,
            hyok_configuration_id=hyok.id,
            key_version=key_version,
            created_at=clock.now_iso(),
        )
        return created, [self._store.create_op(created)]

    def replaced(self, data_key_id: str | None) -> list[WriteOp]:
        """The writes that drop a data key a new one replaces before anything it encrypted was kept (a retried
        plan's earlier seal)."""
        return [self._store.delete_data_key_op(data_key_id)] if data_key_id else []

    def check_readable(self, data_key_id: str, what: str = "state") -> None:
        data_key = self._store.data_key(data_key_id)
        key = self._store.key_version(data_key.key_version_id) if data_key else None
        if data_key is None or key is None:
            raise NotFound(f"HYOK encrypted data key {data_key_id} not found: what it encrypted cannot be read")
        if not key.usable:
            raise Conflict(
                f"this {what} was encrypted with data key {data_key_id}, wrapped by customer key version "
                f"{key.key_version}, which is {key.status}: it can no longer be decrypted"
            )

    def wrapped(self, data_key_id: str, what: str = "state") -> model.EncryptedDataKey:
        """A data key's wrapped form, once `check_readable` passes."""
        self.check_readable(data_key_id, what)
        found = self._store.data_key(data_key_id)
        assert found is not None
        return found
