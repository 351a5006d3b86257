"""The variables of a variable set: the workspace variables' rules (`variables.fill_variable`: categories,
keys, HCL, sensitive values encrypted and write-only), one key per category in a set (a duplicate is 422)."""

from __future__ import annotations

import builtins
from typing import Any

from terrace.adapters.encryptor import Encryptor
from terrace.domain import clock
from terrace.domain.errors import Conflict, Invalid, NotFound
from terrace.domain.ids import new_id
from terrace.domain.principal import Principal
from terrace.domain.varsets import SetVariable, VariableSet
from terrace.services.access.authz import Action
from terrace.services.workspaces.store_variables import stored_fields
from terrace.services.workspaces.store_varsets import VariableSetStore, WriteOp
from terrace.services.workspaces.variables import fill_variable
from terrace.services.workspaces.varsets import VariableSetService

MAX_VARS_AT_CREATION = 40  # one transaction: two writes each, within DynamoDB's 100


def public(item: dict[str, Any]) -> SetVariable:
    return SetVariable(varset_id=item["varset_id"], **stored_fields(item))


def context(varset_id: str, var_id: str) -> dict[str, str]:
    """The encryption context of a set variable's sensitive value (a run that records it keeps this context)."""
    return {"varset": varset_id, "variable": var_id}


def _duplicate(item: dict[str, Any]) -> Invalid:
    return Invalid(
        f"the variable set already has a {item['category']} variable named {item['key']!r}",
        pointer="/data/attributes/key",
    )


class SetVariableService:
    def __init__(self, store: VariableSetStore, encryptor: Encryptor, varsets: VariableSetService) -> None:
        self._store, self._encryptor, self._varsets = store, encryptor, varsets

    def items(self, varset_id: str) -> builtins.list[dict[str, Any]]:
        """The stored variables of a set, sensitive ones as ciphertext (no permission check)."""
        return self._store.variables(varset_id)

    def of(self, vs: VariableSet) -> builtins.list[SetVariable]:
        """The variables of a set the caller was allowed to read (no permission check of its own)."""
        return [public(item) for item in self.items(vs.id)]

    def list(self, principal: Principal, varset_id: str) -> builtins.list[SetVariable]:
        return self.of(self._varsets.get(principal, varset_id))

    def get(self, principal: Principal, varset_id: str, var_id: str) -> SetVariable:
        return public(self._item(self._varsets.get(principal, varset_id), var_id))

    def create(self, principal: Principal, varset_id: str, attrs: dict[str, Any]) -> SetVariable:
        vs = self._varsets.get(principal, varset_id, Action.MANAGE_VARSETS)
        item = self._new_item(vs, attrs)
        if not self._store.create_variable(item):
            raise _duplicate(item)
        return public(item)

    def create_set(
        self,
        principal: Principal,
        organization: str,
        attrs: dict[str, Any],
        workspace_ids: builtins.list[str],
        project_ids: builtins.list[str],
        variables: builtins.list[dict[str, Any]],
    ) -> VariableSet:
        """POST /organizations/:org/varsets: the set with the `vars` its body carries, in one transaction (a bad or
        duplicate variable, like an unknown workspace or project, writes nothing)."""
        return self._varsets.create(
            principal, organization, attrs, workspace_ids, project_ids, more=lambda vs: self._ops_for(vs, variables)
        )

    def _ops_for(self, vs: VariableSet, attrs_list: builtins.list[dict[str, Any]]) -> builtins.list[WriteOp]:
        if len(attrs_list) > MAX_VARS_AT_CREATION:
            raise Invalid(f"a variable set is created with at most {MAX_VARS_AT_CREATION} variables; add more after",
                          pointer="/data/relationships/vars")  # fmt: skip
        items = [self._new_item(vs, attrs) for attrs in attrs_list]
        seen: set[tuple[str, str]] = set()
        ops: builtins.list[WriteOp] = []
        for item in items:
            slot = (item["category"], item["key"])
            if slot in seen:
                raise _duplicate(item)
            seen.add(slot)
            ops += self._store.variable_ops(item)
        return ops

    def update(self, principal: Principal, varset_id: str, var_id: str, attrs: dict[str, Any]) -> SetVariable:
        vs = self._varsets.get(principal, varset_id, Action.MANAGE_VARSETS)
        item = self._item(vs, var_id)
        previous = dict(item)
        version = item["version"]
        self._fill(item, attrs, creating=False)
        item["version"] = version + 1
        if not self._store.update_variable(item, previous, version):
            moved = (item["category"], item["key"]) != (previous["category"], previous["key"])
            if moved and self._store.variable_key_taken(item):
                raise _duplicate(item)
            raise Conflict("the variable changed meanwhile; retry")
        return public(item)

    def delete(self, principal: Principal, varset_id: str, var_id: str) -> None:
        vs = self._varsets.get(principal, varset_id, Action.MANAGE_VARSETS)
        self._store.delete_variable(self._item(vs, var_id))

    # helpers ------------------------------------------------------------------------------
    def _item(self, vs: VariableSet, var_id: str) -> dict[str, Any]:
        item = self._store.find_variable(var_id)
        if item is None or item["varset_id"] != vs.id:
            raise NotFound(f"variable {var_id} not found")
        return item

    def _new_item(self, vs: VariableSet, attrs: dict[str, Any]) -> dict[str, Any]:
        if not isinstance(attrs, dict):
            raise Invalid("each variable is {type: vars, attributes: {...}}", pointer="/data")
        var_id = new_id("var")
        item = {"id": var_id, "varset_id": vs.id, "organization": vs.organization, "created_at": clock.now_iso(),
                "version": 1}  # fmt: skip
        self._fill(item, attrs, creating=True)
        return item

    def _fill(self, item: dict[str, Any], attrs: dict[str, Any], *, creating: bool) -> None:
        ctx = context(item["varset_id"], item["id"])
        fill_variable(item, attrs, creating=creating, encrypt=lambda value: self._encryptor.encrypt(value, ctx))
