"""Policy set parameters (`/policy-sets/:id/parameters`): key/value pairs given to the set's policies.

Values are encrypted at rest as sensitive variables are; a sensitive value is write-only (never shown again).
HCP Terraform hands parameters to Sentinel only; Terrace gives them to OPA policies as `input.parameters`.
"""

from __future__ import annotations

import builtins
from typing import Any

from terrace.adapters.encryptor import Encryptor
from terrace.domain import limits
from terrace.domain.errors import Invalid, NotFound
from terrace.domain.ids import looks_like, new_id
from terrace.domain.policies import PolicySetParameter
from terrace.domain.principal import Principal
from terrace.services.access.authz import Action
from terrace.services.policies.policy_sets import PolicySetService
from terrace.services.policies.store import PolicyStore

KEY_MAX, VALUE_MAX = 128, 4096
PARAMETERS_MAX = 100


def _public(item: dict[str, Any], value: str) -> PolicySetParameter:
    sensitive = bool(item.get("sensitive"))
    return PolicySetParameter(
        id=item["id"],
        policy_set_id=item["policy_set_id"],
        key=item["key"],
        value="" if sensitive else value,
        sensitive=sensitive,
    )


class PolicySetParameterService:
    def __init__(self, store: PolicyStore, encryptor: Encryptor, policy_sets: PolicySetService) -> None:
        self._store, self._encryptor, self._sets = store, encryptor, policy_sets

    def _context(self, item: dict[str, Any]) -> dict[str, str]:
        return {"policy-set": item["policy_set_id"], "parameter": item["id"]}

    def _value(self, item: dict[str, Any]) -> str:
        return self._encryptor.decrypt(item["ciphertext"], self._context(item))

    def _items(self, set_id: str) -> builtins.list[dict[str, Any]]:
        return self._store.parameters_of(set_id)

    def _item(self, principal: Principal, set_id: str, param_id: str, action: Action) -> dict[str, Any]:
        self._sets.get(principal, set_id, action)
        item = self._store.parameter(param_id) if looks_like(param_id, "var") else None
        if item is None or item.get("policy_set_id") != set_id:
            raise NotFound(f"parameter {param_id} not found")
        return item

    def list(self, principal: Principal, set_id: str) -> builtins.list[PolicySetParameter]:
        self._sets.get(principal, set_id, Action.READ_POLICIES)
        return [_public(i, self._value(i)) for i in self._items(set_id)]

    def get(self, principal: Principal, set_id: str, param_id: str) -> PolicySetParameter:
        item = self._item(principal, set_id, param_id, Action.READ_POLICIES)
        return _public(item, self._value(item))

    def values(self, set_id: str) -> dict[str, str]:
        """Every parameter of a set with its value (sensitive ones too): for its policies' evaluation only."""
        return {i["key"]: self._value(i) for i in self._items(set_id)}

    def create(self, principal: Principal, set_id: str, attrs: dict[str, Any]) -> PolicySetParameter:
        self._sets.get(principal, set_id, Action.MANAGE_POLICIES)
        if attrs.get("category") != "policy-set":
            raise Invalid("category must be 'policy-set'", pointer="/data/attributes/category")
        existing = self._items(set_id)
        if len(existing) >= PARAMETERS_MAX:
            raise Invalid(f"a policy set has at most {PARAMETERS_MAX} parameters")
        key = _key(attrs.get("key"))
        if any(i["key"] == key for i in existing):
            raise Invalid(f"key {key} has already been taken", pointer="/data/attributes/key")
        value = _text(attrs.get("value"))
        param_id = new_id("var")
        item = {
            "id": param_id,
            "policy_set_id": set_id,
            "key": key,
            "sensitive": _sensitive(attrs.get("sensitive"), False),
            "version": 1,
        }
        item["ciphertext"] = self._encryptor.encrypt(value, self._context(item))
        self._store.create_parameter(item)
        return _public(item, value)

    def update(self, principal: Principal, set_id: str, param_id: str, attrs: dict[str, Any]) -> PolicySetParameter:
        item = self._item(principal, set_id, param_id, Action.MANAGE_POLICIES)
        version = item["version"]
        if "key" in attrs:
            key = _key(attrs.get("key"))
            if any(i["key"] == key and i["id"] != param_id for i in self._items(set_id)):
                raise Invalid(f"key {key} has already been taken", pointer="/data/attributes/key")
            item["key"] = key  # (and its place in the set's listing)
        if item.get("sensitive") and attrs.get("sensitive") is False:
            raise Invalid("a sensitive parameter cannot be made non-sensitive", pointer="/data/attributes/sensitive")
        item["sensitive"] = _sensitive(attrs.get("sensitive"), bool(item.get("sensitive")))
        value = _text(attrs["value"]) if attrs.get("value") is not None else self._value(item)
        item["ciphertext"] = self._encryptor.encrypt(value, self._context(item))
        item["version"] = version + 1
        self._store.replace_parameter(item, version)
        return _public(item, value)

    def delete(self, principal: Principal, set_id: str, param_id: str) -> None:
        self._item(principal, set_id, param_id, Action.MANAGE_POLICIES)
        self._store.delete_parameter(param_id)


def _key(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise Invalid("key is required", pointer="/data/attributes/key")
    return limits.text(value, "key", KEY_MAX)


def _text(value: Any) -> str:
    return "" if value is None else limits.text(value, "value", VALUE_MAX)


def _sensitive(value: Any, current: bool) -> bool:
    if value is None:
        return current
    if not isinstance(value, bool):
        raise Invalid("sensitive must be a boolean", pointer="/data/attributes/sensitive")
    return value
