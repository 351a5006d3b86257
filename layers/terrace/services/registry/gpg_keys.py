"""GPG keys of the private provider registry (go-tfe's `gpg_key.go`, `/api/registry/private/v2/gpg-keys`).

A key belongs to a namespace, an organization's name; it is stored under the organization's key (so a renamed
organization keeps its keys) and addressed by its key ID, computed from the uploaded ASCII armor by Sequoia-PGP
(the 64-bit ID of the primary key, 16 upper-case hex digits), never taken from the client. Only a public key is
accepted. Members read keys (`READ_PROVIDERS`); owners and `manage-providers` teams add, move and delete them.
A version's `key-id` names the key whose armor the provider registry protocol hands terraform/tofu to verify the
version's `SHA256SUMS.sig`.
"""

from __future__ import annotations

import builtins
import warnings
from typing import Any

from terrace.domain import clock
from terrace.domain.errors import Conflict, Invalid, NotFound
from terrace.domain.ids import new_id
from terrace.domain.organizations import Organization
from terrace.domain.principal import Principal
from terrace.domain.registry_providers import ARMOR_MAX_CHARS, PRIVATE, GPGKey
from terrace.services.access.authz import Action
from terrace.services.access.organizations import OrganizationService
from terrace.services.registry.store_providers import ProviderStore

SECRET = "ascii-armor holds a secret key: upload the public key only"
NOT_AUTHORIZED = "namespace not authorized"  # go-tfe recognizes this text (ErrNamespaceNotAuthorized)


def key_id_of(ascii_armor: Any) -> str:
    """The 64-bit key ID of the one public key in `ascii_armor`, or Invalid saying why it is not one."""
    if not isinstance(ascii_armor, str) or not ascii_armor.strip():
        raise Invalid("ascii-armor is required", pointer="/data/attributes/ascii-armor")
    if "PRIVATE KEY BLOCK" in ascii_armor:
        raise Invalid(SECRET, pointer="/data/attributes/ascii-armor")
    if len(ascii_armor) > ARMOR_MAX_CHARS or "-----BEGIN PGP PUBLIC KEY BLOCK-----" not in ascii_armor:
        raise Invalid(
            f"ascii-armor must be one ASCII-armored PGP public key block of at most {ARMOR_MAX_CHARS} characters",
            pointer="/data/attributes/ascii-armor",
        )
    import pysequoia  # Sequoia-PGP: imported when a key is added, not by every process

    try:
        certs = pysequoia.Cert.split_bytes(ascii_armor.encode())
    except BaseException as exc:  # Sequoia's parse errors (and a Rust panic, a BaseException); the first line says why
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise Invalid(f"ascii-armor is not an OpenPGP key: {reason}", pointer="/data/attributes/ascii-armor") from exc
    if len(certs) != 1:
        raise Invalid("ascii-armor must hold exactly one key", pointer="/data/attributes/ascii-armor")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # pysequoia points at its Tsk type for secret keys
        secret = certs[0].has_secret_keys
    if secret:
        raise Invalid(SECRET, pointer="/data/attributes/ascii-armor")
    return str(certs[0].fingerprint).upper()[-16:]


class GPGKeyService:
    def __init__(self, store: ProviderStore, organizations: OrganizationService) -> None:
        self._store, self._orgs = store, organizations

    def _namespace(self, principal: Principal, registry: str, namespace: str, action: Action) -> Organization:
        if registry != PRIVATE:
            raise NotFound(f"registry {registry} not found")
        return self._orgs.get(principal, namespace, action)

    def list(self, principal: Principal, registry: str, namespaces: builtins.list[str]) -> builtins.list[GPGKey]:
        if not namespaces:
            raise Invalid("filter[namespace] must name at least one namespace", pointer="/filter[namespace]")
        found: builtins.list[GPGKey] = []
        for namespace in dict.fromkeys(namespaces):
            org = self._namespace(principal, registry, namespace, Action.READ_PROVIDERS)
            found.extend(self._store.keys_of(org.key, org.name))
        return found

    def read(self, principal: Principal, registry: str, namespace: str, key_id: str) -> GPGKey:
        missing = NotFound(f"GPG key {key_id} not found in {namespace}")
        try:
            org = self._namespace(principal, registry, namespace, Action.READ_PROVIDERS)
        except NotFound as exc:
            raise missing from exc
        found = self._store.key(org.key, key_id, org.name)
        if found is None:
            raise missing
        return found

    def create(self, principal: Principal, registry: str, attrs: dict[str, Any]) -> GPGKey:
        namespace = attrs.get("namespace")
        if not isinstance(namespace, str) or not namespace:
            raise Invalid("namespace is required", pointer="/data/attributes/namespace")
        org = self._namespace(principal, registry, namespace, Action.MANAGE_PROVIDERS)
        key_id = key_id_of(attrs.get("ascii-armor"))
        now = clock.now_iso()
        created = GPGKey(id=new_id("gpgkey"), organization=org.key, namespace=org.name, key_id=key_id,
                         ascii_armor=attrs["ascii-armor"], created_at=now, updated_at=now)  # fmt: skip
        if not self._store.create_key(created):
            raise Conflict(f"the GPG key {key_id} is already in {org.name}")
        return created

    def update(self, principal: Principal, registry: str, namespace: str, key_id: str, attrs: dict[str, Any]) -> GPGKey:
        """Moves the key to another namespace the caller manages (the only attribute a key's update changes)."""
        key = self.read(principal, registry, namespace, key_id)
        source = self._namespace(principal, registry, namespace, Action.MANAGE_PROVIDERS)
        target_name = attrs.get("namespace")
        if not isinstance(target_name, str) or not target_name:
            raise Invalid("namespace is required", pointer="/data/attributes/namespace")
        try:
            target = self._namespace(principal, registry, target_name, Action.MANAGE_PROVIDERS)
        except NotFound as exc:  # absent and hidden alike
            raise Invalid(f"{NOT_AUTHORIZED}: {target_name}", pointer="/data/attributes/namespace") from exc
        if target.key == source.key:
            return key
        moved = self._store.move_key(key.key_id, source.key, (target.key, target.name), clock.now_iso())
        if moved is None:  # (Conflict when the target has it already)
            raise NotFound(f"GPG key {key_id} not found in {namespace}")
        return moved

    def delete(self, principal: Principal, registry: str, namespace: str, key_id: str) -> None:
        self.read(principal, registry, namespace, key_id)
        org = self._namespace(principal, registry, namespace, Action.MANAGE_PROVIDERS)
        self._store.delete_key(org.key, key_id)

    def signing_key(self, org_key: str, key_id: str, namespace: str) -> GPGKey | None:
        """The stored key `key_id` of an organization's namespace (the provider registry protocol's signing key)."""
        return self._store.key(org_key, key_id, namespace)
