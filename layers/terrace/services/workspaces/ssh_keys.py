"""SSH keys of an organization (TFC's `/organizations/:org/ssh-keys`) and the workspace `ssh-key` relationship.

A key's value (a private key) is encrypted as sensitive variables are (KMS, an encryption context naming the
organization and the key) and never leaves through the API or the UI: only a job of a workspace it is assigned
to receives it (`for_run`), to fetch `git::ssh://` module sources during `terraform init`.
"""

from __future__ import annotations

import builtins
import dataclasses
from typing import Any

from terrace.adapters.encryptor import Encryptor
from terrace.adapters.table import ConditionFailed, Table
from terrace.domain import clock
from terrace.domain.errors import Conflict, Invalid, NotFound
from terrace.domain.ids import looks_like, new_id
from terrace.domain.principal import Principal
from terrace.domain.ssh_keys import SSHKey
from terrace.domain.ssh_keys import check_name as _name
from terrace.domain.ssh_keys import check_value as _value
from terrace.domain.workspace import Workspace
from terrace.services.access.authz import Action
from terrace.services.access.organizations import OrganizationService
from terrace.services.workspaces.workspaces import WorkspaceService

SORT_KEY = "sshkey"
WORKSPACE_FIELD = "ssh_key_id"  # in `Workspace.extra`


def _public(item: dict[str, Any]) -> SSHKey:
    return SSHKey(id=item["pk"], organization=item["organization"], name=item["name"], created_at=item["created_at"])


class SSHKeyService:
    def __init__(
        self, table: Table, encryptor: Encryptor, organizations: OrganizationService, workspaces: WorkspaceService
    ) -> None:
        self._table, self._encryptor = table, encryptor
        self._orgs, self._workspaces = organizations, workspaces

    @staticmethod
    def _context(organization: str, key_id: str) -> dict[str, str]:
        return {"organization": organization, "ssh-key": key_id}

    def _item(self, principal: Principal, key_id: str) -> dict[str, Any]:
        item = self._table.get(key_id, SORT_KEY) if looks_like(key_id, "sshkey") else None
        try:
            org = self._orgs.get_by_key(principal, item["organization"], Action.MANAGE_ORGANIZATION) if item else None
        except NotFound:
            org = None
        if item is None or org is None or not _belongs(item, org.id):
            raise NotFound(f"ssh key {key_id} not found")
        return item

    def list(self, principal: Principal, organization: str) -> builtins.list[SSHKey]:
        org = self._orgs.get(principal, organization, Action.MANAGE_ORGANIZATION)
        items = self._table.query(f"org#{org.key}#ssh-keys", index="gsi1")
        return [_public(item) for item in items if _belongs(item, org.id)]

    def get(self, principal: Principal, key_id: str) -> SSHKey:
        return _public(self._item(principal, key_id))

    def create(self, principal: Principal, organization: str, attrs: dict[str, Any]) -> SSHKey:
        org = self._orgs.get(principal, organization, Action.MANAGE_ORGANIZATION)
        name, value = _name(attrs), _value(attrs)
        key_id, now = new_id("sshkey"), clock.now_iso()
        item = {
            "pk": key_id,
            "sk": SORT_KEY,
            "organization": org.key,  # the storage key: a rename changes nothing here
            "organization_id": org.id,  # a later organization of the same name never gets this key
            "name": name,
            "created_at": now,
            "ciphertext": self._encryptor.encrypt(value, self._context(org.key, key_id)),
            "version": 1,
            "gsi1pk": f"org#{org.key}#ssh-keys",
            "gsi1sk": f"{now}#{key_id}",
        }
        self._table.put(item, if_absent=True)
        return _public(item)

    def update(self, principal: Principal, key_id: str, attrs: dict[str, Any]) -> SSHKey:
        item = self._item(principal, key_id)
        version = item["version"]
        if "name" in attrs:
            item["name"] = _name(attrs)
        if "value" in attrs:
            item["ciphertext"] = self._encryptor.encrypt(_value(attrs), self._context(item["organization"], key_id))
        item["version"] = version + 1
        try:
            self._table.put(item, if_version=version)
        except ConditionFailed as exc:
            raise Conflict(f"ssh key {key_id} changed concurrently; retry") from exc
        return _public(item)

    def delete(self, principal: Principal, key_id: str) -> None:
        """Deletes the key and unassigns it from every workspace of its organization that used it."""
        item = self._item(principal, key_id)
        self._table.delete(key_id, SORT_KEY)
        claims = self._table.query(f"org#{item['organization']}#wsnames")
        for claim in claims:
            ws = self._workspaces.load(claim["workspace_id"])
            if ws.extra.get(WORKSPACE_FIELD) == key_id:
                self._workspaces.mutate(ws.id, lambda w: _assigned(w, None, key_id))

    # the workspace relationship ----------------------------------------------------------
    def assign(self, principal: Principal, ws: Workspace, key_id: Any) -> Workspace:
        """`PATCH /workspaces/:id/relationships/ssh-key`: `id` a key of the workspace's organization, or null."""
        self._workspaces.authorize(principal, Action.UPDATE_WORKSPACE, ws)
        if key_id is not None:
            if not isinstance(key_id, str):
                raise Invalid("id must be an ssh key id or null", pointer="/data/attributes/id")
            if self._usable(ws, key_id) is None:
                raise NotFound(f"ssh key {key_id} not found")
        return self._workspaces.mutate(ws.id, lambda w: _assigned(w, key_id))

    def for_run(self, ws: Workspace) -> str | None:
        """The private key of the workspace's SSH key, for its job only (never returned by the API)."""
        item = self._usable(ws, ws.extra.get(WORKSPACE_FIELD))
        if item is None:
            return None
        return self._encryptor.decrypt(item["ciphertext"], self._context(item["organization"], item["pk"]))

    def _usable(self, ws: Workspace, key_id: str | None) -> dict[str, Any] | None:
        """The key item when it belongs to the workspace's organization (this one, not an earlier namesake)."""
        item = self._table.get(key_id, SORT_KEY) if key_id and looks_like(key_id, "sshkey") else None
        if item is None or item["organization"] != ws.organization:
            return None
        return item if _belongs(item, self._orgs.by_key(ws.organization).id) else None


def _belongs(item: dict[str, Any], organization_id: str) -> bool:
    return bool(item.get("organization_id") == organization_id)


def _assigned(ws: Workspace, key_id: str | None, only_if: str | None = None) -> Workspace:
    extra = dict(ws.extra)
    if only_if is not None and extra.get(WORKSPACE_FIELD) != only_if:
        return ws
    if key_id is None:
        extra.pop(WORKSPACE_FIELD, None)
    else:
        extra[WORKSPACE_FIELD] = key_id
    return dataclasses.replace(ws, extra=extra)
