"""The test of a HYOK configuration: Terrace's workload identity token for the configuration (audience and subject
of its OIDC configuration's kind) reaches the customer's key through the key wrapper port, which wraps a fresh data
key and unwraps it again. On success the configuration is `available`, the version of the customer's key that
wrapped it is recorded (a customer key version) and the wrapped data key kept (an encrypted data key; its plaintext
is dropped at once). On failure it is `test_failed` with the key service's reason. Requested through the events
queue when a configuration is created or its key changes (`EVENT`), or at once by `POST .../actions/test`."""

from __future__ import annotations

import logging
import os
import secrets
import time
from collections.abc import Callable

from terrace.adapters.key_wrapper import CustomerKey, KeyUnavailable, KeyWrapper
from terrace.domain import clock
from terrace.domain import hyok as model
from terrace.domain.ids import new_id
from terrace.domain.workload_identity import AUDIENCES
from terrace.services.access.organizations import OrganizationService
from terrace.services.access.workload_issuer import WorkloadIssuer
from terrace.services.hyok.store import HyokStore
from terrace.services.optimistic import optimistic

log = logging.getLogger("terrace.hyok")
EVENT = "hyok.test"
TOKEN_TTL_S = 300


def requested(hyok_id: str) -> dict[str, object]:
    """The event that queues a configuration's test, staged in the outbox with the write that asks for it."""
    return {"type": EVENT, "hyok_configuration": hyok_id}


class KeyTester:
    def __init__(
        self,
        store: HyokStore,
        organizations: OrganizationService,
        wrapper: KeyWrapper,
        issuer: WorkloadIssuer,
        clock_s: Callable[[], float] = time.time,
    ) -> None:
        self._store, self._orgs, self._wrapper, self._issuer, self._clock = (
            store,
            organizations,
            wrapper,
            issuer,
            clock_s,
        )

    def on_event(self, event: dict[str, object]) -> None:
        hyok_id = event.get("hyok_configuration")
        if isinstance(hyok_id, str):
            self.run(hyok_id)

    def customer_key(self, hyok: model.HyokConfiguration) -> CustomerKey:
        """How to reach the configuration's key, with a fresh workload identity token for it."""
        oidc = self._store.oidc(hyok.oidc_configuration_id)
        kind = oidc.kind if oidc else hyok.oidc_kind.kind
        org = self._orgs.by_key(hyok.organization)
        issued = int(self._clock())
        claims = {
            "jti": secrets.token_hex(16),
            "iss": self._issuer.issuer,
            "aud": AUDIENCES[kind],
            "iat": issued,
            "nbf": issued - 5,
            "exp": issued + TOKEN_TTL_S,
            "sub": f"organization:{org.name}:hyok_configuration:{hyok.name}",
            "terraform_organization_id": org.id,
            "terraform_organization_name": org.name,
            "terraform_hyok_configuration_id": hyok.id,
        }
        return CustomerKey(
            kek_id=hyok.kek_id,
            oidc_kind=kind,
            kms_options=dict(hyok.kms_options),
            oidc=dict(oidc.attributes) if oidc else {},
            web_identity_token=self._issuer.sign(claims),
        )

    def run(self, hyok_id: str) -> model.HyokConfiguration | None:
        """Tests the configuration (None when it is gone); a revoked one is left alone."""
        hyok = self._store.hyok(hyok_id)
        if hyok is None or hyok.status in (model.REVOKING, model.REVOKED):
            return hyok
        context = {"hyok-configuration": hyok.id, "purpose": "test"}
        try:
            key = self.customer_key(hyok)
            data_key = os.urandom(32)
            wrapped = self._wrapper.wrap(key, data_key, context)
            if self._wrapper.unwrap(key, wrapped.ciphertext, context) != data_key:
                raise KeyUnavailable("the key unwrapped a different data key than it wrapped")
            del data_key
        except KeyUnavailable as exc:
            return self._finish(hyok_id, model.TEST_FAILED, str(exc))
        except Exception:  # noqa: BLE001 - any other failure is recorded as the configuration's error
            log.exception("HYOK configuration %s: the key test failed", hyok_id)
            return self._finish(hyok_id, model.ERRORED, "the key test failed unexpectedly")
        version = self._key_version(hyok, wrapped.key_version)
        self._store.create(
            model.EncryptedDataKey(
                id=new_id("dek"),
                organization=hyok.organization,
                key_version_id=version.id,
                customer_key_name=hyok.kek_id,
                encrypted_dek=wrapped.ciphertext,
                created_at=clock.now_iso(),
                context=context,
            )
        )
        return self._finish(hyok_id, model.AVAILABLE, None)

    def _key_version(self, hyok: model.HyokConfiguration, key_version: str) -> model.KeyVersion:
        for known in self._store.key_versions_of(hyok.id):
            if known.key_version == key_version and known.status == model.KEY_AVAILABLE:
                return known
        created = model.KeyVersion(
            id=new_id("keyv"),
            organization=hyok.organization,
            hyok_configuration_id=hyok.id,
            key_version=key_version,
            created_at=clock.now_iso(),
        )
        self._store.create(created)
        return created

    def _finish(self, hyok_id: str, status: str, error: str | None) -> model.HyokConfiguration | None:
        """The outcome written over whatever changed meanwhile (an update, a rename); a revocation wins."""

        def step() -> model.HyokConfiguration | None:
            hyok = self._store.hyok(hyok_id)
            if hyok is None or hyok.status in (model.REVOKING, model.REVOKED):
                return hyok
            hyok.status, hyok.error = status, error
            self._store.replace(hyok)
            return hyok

        return optimistic(step, exhausted=lambda: self._store.hyok(hyok_id))
