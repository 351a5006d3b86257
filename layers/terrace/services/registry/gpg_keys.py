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

from terrace.adapters.table import ConditionFailed, Delete, Put, Table
from terrace.domain import clock
from terrace.domain.errors import Conflict, Invalid, NotFound
from terrace.domain.ids import new_id
from terrace.domain.organizations import Organization
from terrace.domain.principal import Principal
from terrace.domain.registry_providers import ARMOR_MAX_CHARS, PRIVATE, GPGKey
from terrace.services.access.authz import Action
from terrace.services.access.organizations import OrganizationService

SECRET = "ascii-armor holds a secret key: upload the public key only"
NOT_AUTHORIZED = "namespace not authorized"  # go-tfe recognizes this text (ErrNamespaceNotAuthorized)


def _keys(org_key: str) -> str:
    return f"org#{org_key}#gpg-keys"


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


def _public(item: dict[str, Any], org: Organization) -> GPGKey:
    return GPGKey(
        id=item["id"],
        organization=item["organization"],
        namespace=org.name,
        key_id=item["sk"],
        ascii_armor=item["ascii_armor"],
        created_at=item["created_at"],
        updated_at=item["updated_at"],
    )


class GPGKeyService:
    def __init__(self, table: Table, organizations: OrganizationService) -> None:
        self._table, self._orgs = table, organizations

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
            found.extend(_public(item, org) for item in self._table.query(_keys(org.key)))
        return found

    def read(self, principal: Principal, registry: str, namespace: str, key_id: str) -> GPGKey:
        missing = NotFound(f"GPG key {key_id} not found in {namespace}")
        try:
            org = self._namespace(principal, registry, namespace, Action.READ_PROVIDERS)
        except NotFound as exc:
            raise missing from exc
        item = self._table.get(_keys(org.key), key_id)
        if item is None:
            raise missing
        return _public(item, org)

    def create(self, principal: Principal, registry: str, attrs: dict[str, Any]) -> GPGKey:
        namespace = attrs.get("namespace")
        if not isinstance(namespace, str) or not namespace:
            raise Invalid("namespace is required", pointer="/data/attributes/namespace")
        org = self._namespace(principal, registry, namespace, Action.MANAGE_PROVIDERS)
        key_id = key_id_of(attrs.get("ascii-armor"))
        now = clock.now_iso()
        item = {
            "pk": _keys(org.key),
            "sk": key_id,
            "id": new_id("gpgkey"),
            "organization": org.key,
            "ascii_armor": attrs["ascii-armor"],
            "created_at": now,
            "updated_at": now,
            "version": 1,
        }
        try:
            self._table.put(item, if_absent=True)
        except ConditionFailed as exc:
            raise Conflict(f"the GPG key {key_id} is already in {org.name}") from exc
        return _public(item, org)

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
        item = self._table.get(_keys(source.key), key.key_id)
        if item is None:
            raise NotFound(f"GPG key {key_id} not found in {namespace}")
        moved = {**item, "pk": _keys(target.key), "organization": target.key, "updated_at": clock.now_iso()}
        try:
            self._table.transact([Delete(_keys(source.key), key.key_id), Put(moved, if_absent=True)])
        except ConditionFailed as exc:
            raise Conflict(f"the GPG key {key.key_id} is already in {target.name}") from exc
        return _public(moved, target)

    def delete(self, principal: Principal, registry: str, namespace: str, key_id: str) -> None:
        self.read(principal, registry, namespace, key_id)
        org = self._namespace(principal, registry, namespace, Action.MANAGE_PROVIDERS)
        self._table.delete(_keys(org.key), key_id)

    def signing_key(self, org_key: str, key_id: str) -> dict[str, Any] | None:
        """The stored key `key_id` of an organization's namespace (the provider registry protocol's signing key)."""
        return self._table.get(_keys(org_key), key_id)

    def purge_organization(self, org_key: str) -> None:
        for item in self._table.query(_keys(org_key)):
            self._table.delete(item["pk"], item["sk"])
