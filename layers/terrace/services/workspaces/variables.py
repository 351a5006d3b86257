"""Workspace variables. Sensitive values are encrypted with KMS and never leave except to their run."""

from __future__ import annotations

import builtins
import secrets
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from terrace.adapters.encryptor import Encryptor
from terrace.domain import clock, limits
from terrace.domain.errors import Conflict, Invalid, NotFound
from terrace.domain.ids import looks_like, new_id
from terrace.domain.jobs import RunVariable
from terrace.domain.principal import Principal
from terrace.domain.runs import Run
from terrace.domain.variables import (
    ENV_KEY,
    KEY_MAX,
    MAX_VALUE_BYTES,
    TERRAFORM_KEY,
    SensitiveValues,
    Variable,
)
from terrace.domain.workspace import Workspace
from terrace.services.access.authz import Action
from terrace.services.workspaces.store_variables import VariableStore, stored_fields
from terrace.services.workspaces.workspaces import WorkspaceService

CATEGORIES = ("terraform", "env")
DECRYPTED_CACHE = 512  # sensitive values kept per process, by ciphertext (masking reads logs often)


def _public(item: dict[str, Any]) -> Variable:
    return Variable(workspace_id=item["workspace_id"], **stored_fields(item))


def _str(attrs: dict[str, Any], key: str, default: str = "") -> str:
    value = attrs.get(key, default)
    if value is None:
        return default
    if not isinstance(value, str):
        raise Invalid(f"{key} must be a string", pointer=f"/data/attributes/{key}")
    return value


def _bool(attrs: dict[str, Any], key: str, default: bool) -> bool:
    value = attrs.get(key, default)
    if not isinstance(value, bool):
        raise Invalid(f"{key} must be true or false", pointer=f"/data/attributes/{key}")
    return value


class VariableService:
    def __init__(self, store: VariableStore, encryptor: Encryptor, workspaces: WorkspaceService) -> None:
        self._store = store
        self._encryptor = encryptor
        self._workspaces = workspaces
        self._decrypted: OrderedDict[str, str] = OrderedDict()  # context:ciphertext -> value
        self._decrypted_lock = threading.Lock()

    def _context(self, ws_id: str, var_id: str) -> dict[str, str]:
        return {"workspace": ws_id, "variable": var_id}

    def _items(self, ws_id: str) -> list[dict[str, Any]]:
        return self._store.of_workspace(ws_id)

    def items(self, ws_id: str) -> list[dict[str, Any]]:
        """The workspace's stored variables, sensitive ones as ciphertext (no permission check)."""
        return self._items(ws_id)

    def context(self, ws_id: str, var_id: str) -> dict[str, str]:
        return self._context(ws_id, var_id)

    def list(self, principal: Principal, ws: Workspace) -> list[Variable]:
        self._workspaces.authorize(principal, Action.READ_VARIABLES, ws)
        return [_public(item) for item in self._items(ws.id)]

    def _item(self, ws: Workspace, var_id: str) -> dict[str, Any]:
        item = self._store.find(var_id)
        if item is None or item["workspace_id"] != ws.id:
            raise NotFound(f"variable {var_id} not found")
        return item

    def workspace_of(self, principal: Principal, var_id: str) -> Workspace:
        """The workspace of variable `var_id` (the legacy `/vars/:id`), read as the caller (NotFound: none, or
        hidden from them, in the same words)."""
        item = self._store.find(var_id) if looks_like(var_id, "var") else None
        try:
            return self._workspaces.get(principal, item["workspace_id"]) if item else self._missing(var_id)
        except NotFound as exc:
            raise NotFound(f"variable {var_id} not found") from exc

    @staticmethod
    def _missing(var_id: str) -> Workspace:
        raise NotFound(f"variable {var_id} not found")

    def get(self, principal: Principal, ws: Workspace, var_id: str) -> Variable:
        self._workspaces.authorize(principal, Action.READ_VARIABLES, ws)
        return _public(self._item(ws, var_id))

    def create(self, principal: Principal, ws: Workspace, attrs: dict[str, Any]) -> Variable:
        self._workspaces.authorize(principal, Action.WRITE_VARIABLES, ws)
        var_id = new_id("var")
        item: dict[str, Any] = {"id": var_id, "workspace_id": ws.id, "created_at": clock.now_iso(), "version": 1}
        self._fill(item, attrs, creating=True)
        if not self._store.create(item):
            raise Conflict(
                f"a {item['category']} variable named {item['key']!r} already exists",
                meta={"pointer": "/data/attributes/key"},
            )
        return _public(item)

    def update(self, principal: Principal, ws: Workspace, var_id: str, attrs: dict[str, Any]) -> Variable:
        self._workspaces.authorize(principal, Action.WRITE_VARIABLES, ws)
        item = self._item(ws, var_id)
        previous = dict(item)
        version = item["version"]
        self._fill(item, attrs, creating=False)
        item["version"] = version + 1
        if not self._store.update(item, previous, version):
            raise Conflict(f"a {item['category']} variable named {item['key']!r} already exists or it changed")
        return _public(item)

    def delete(self, principal: Principal, ws: Workspace, var_id: str) -> None:
        self._workspaces.authorize(principal, Action.WRITE_VARIABLES, ws)
        self._store.delete(self._item(ws, var_id))

    def _fill(self, item: dict[str, Any], attrs: dict[str, Any], *, creating: bool) -> None:
        context = self._context(item["workspace_id"], item["id"])
        fill_variable(item, attrs, creating=creating, encrypt=lambda value: self._encryptor.encrypt(value, context))

    def decrypt(self, ciphertext: str, context: dict[str, str]) -> str:
        """A sensitive value (a workspace's, a variable set's, or one a run recorded), kept a while per process."""
        key = f"{sorted(context.items())}:{ciphertext}"  # the same KMS context, or a fresh decrypt
        with self._decrypted_lock:
            if key in self._decrypted:
                self._decrypted.move_to_end(key)
                return self._decrypted[key]
        value = self._encryptor.decrypt(ciphertext, context)
        with self._decrypted_lock:
            self._decrypted[key] = value
            while len(self._decrypted) > DECRYPTED_CACHE:
                self._decrypted.popitem(last=False)
        return value

    def _decrypt(self, workspace_id: str, item: dict[str, Any]) -> str:
        return self.decrypt(item["ciphertext"], self._context(workspace_id, item["id"]))

    def sensitive_values(self, workspace_id: str) -> SensitiveValues:
        """The workspace's sensitive values, to mask in its logs and plans (never returned by the API)."""
        items = [item for item in self._items(workspace_id) if item["sensitive"]]
        return SensitiveValues(
            values=tuple(self._decrypt(workspace_id, item) for item in items),
            terraform_keys=frozenset(item["key"] for item in items if item["category"] == "terraform"),
        )

    def recorded(self, run: Run) -> builtins.list[RunVariable]:
        """The variables a run recorded when it was created (`effective_variables.py`), decrypted for its runner;
        a run created before runs recorded them gets the workspace's variables and its own, as then."""
        if run.resolved_variables is None:
            own = [v for v in self.for_run(run.workspace_id)
                   if not (v.category == "terraform" and any(rv["key"] == v.key for rv in run.variables))]  # fmt: skip
            return own + [RunVariable(key=v["key"], value=v["value"], category="terraform", hcl=True)
                          for v in run.variables]  # fmt: skip
        return [
            RunVariable(
                key=entry["key"],
                value=self.decrypt(entry["ciphertext"], entry["context"]) if entry["sensitive"] else entry["value"],
                category=entry["category"],
                hcl=entry["hcl"],
                sensitive=entry["sensitive"],
            )
            for entry in run.resolved_variables
        ]

    def sensitive_values_of(self, run: Run) -> SensitiveValues:
        """What to mask in a run's logs and plans: the sensitive values it recorded, and its workspace's."""
        own = self.sensitive_values(run.workspace_id)
        recorded = [entry for entry in run.resolved_variables or [] if entry["sensitive"]]
        return SensitiveValues(
            values=tuple(
                dict.fromkeys([*own.values, *(self.decrypt(e["ciphertext"], e["context"]) for e in recorded)])
            ),
            terraform_keys=own.terraform_keys | frozenset(e["key"] for e in recorded if e["category"] == "terraform"),
        )

    def for_run(self, workspace_id: str) -> builtins.list[RunVariable]:
        """Decrypted variables for one run's runner (never returned by the API)."""
        found = []
        for item in self._items(workspace_id):
            value = item.get("value", "")
            if item["sensitive"]:
                value = self._decrypt(workspace_id, item)
            found.append(
                RunVariable(
                    key=item["key"],
                    value=value,
                    category=item["category"],
                    hcl=item["hcl"],
                    sensitive=item["sensitive"],
                )
            )
        return found


def fill_variable(
    item: dict[str, Any], attrs: dict[str, Any], *, creating: bool, encrypt: Callable[[str], str]
) -> None:
    """Validate `attrs` and apply them to a stored variable `item` (a workspace's or a variable set's): the same
    rules for both. A sensitive value is stored only as `encrypt(value)`; a sensitive variable stays sensitive."""
    # attributes other than these (TFC's read-only ones, `type`, anything new) are ignored, as TFC does
    category = attrs.get("category", item.get("category"))
    if category not in CATEGORIES:
        raise Invalid("category must be terraform or env", pointer="/data/attributes/category")
    key = _str(attrs, "key", item.get("key", ""))
    pattern = TERRAFORM_KEY if category == "terraform" else ENV_KEY
    if not key or len(key) > KEY_MAX or not pattern.match(key):
        raise Invalid(f"{key!r} is not a valid {category} variable name", pointer="/data/attributes/key")
    was_sensitive = bool(item.get("sensitive", False))
    sensitive = _bool(attrs, "sensitive", was_sensitive)
    if was_sensitive and not sensitive:
        raise Invalid(
            "a sensitive variable cannot be made non-sensitive; delete and re-create it",
            pointer="/data/attributes/sensitive",
        )
    item.update(
        key=key,
        category=category,
        sensitive=sensitive,
        hcl=_bool(attrs, "hcl", item.get("hcl", False)),
        description=limits.text(
            _str(attrs, "description", item.get("description", "")), "description", limits.VARIABLE_DESCRIPTION_MAX
        ),
    )
    if "value" in attrs or creating:
        value = _str(attrs, "value")
    elif sensitive and not was_sensitive:
        value = item.get("value", "")
    else:
        value = None
    if value is not None:
        if len(value.encode()) > MAX_VALUE_BYTES:
            raise Invalid(f"value is longer than {MAX_VALUE_BYTES} bytes", pointer="/data/attributes/value")
        if sensitive:
            item["ciphertext"] = encrypt(value)
            item.pop("value", None)
        else:
            item["value"] = value
    item["version_id"] = secrets.token_hex(16)  # random: reveals nothing about the value; new on every change
