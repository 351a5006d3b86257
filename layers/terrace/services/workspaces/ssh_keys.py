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
from terrace.domain import clock
from terrace.domain.errors import Conflict, Invalid, NotFound
from terrace.domain.ids import new_id
from terrace.domain.principal import Principal
from terrace.domain.ssh_keys import SSHKey
from terrace.domain.ssh_keys import check_name as _name
from terrace.domain.ssh_keys import check_value as _value
from terrace.domain.workspace import Workspace
from terrace.services.access.authz import Action
from terrace.services.access.organizations import OrganizationService
from terrace.services.workspaces.store_ssh_keys import SSHKeyStore, StoredSSHKey
from terrace.services.workspaces.workspaces import WorkspaceService

WORKSPACE_FIELD = "ssh_key_id"  # in `Workspace.extra`


class SSHKeyService:
    def __init__(
        self, store: SSHKeyStore, encryptor: Encryptor, organizations: OrganizationService, workspaces: WorkspaceService
    ) -> None:
        self._store, self._encryptor = store, encryptor
        self._orgs, self._workspaces = organizations, workspaces

    @staticmethod
    def _context(organization: str, key_id: str) -> dict[str, str]:
        return {"organization": organization, "ssh-key": key_id}

    def _item(self, principal: Principal, key_id: str) -> StoredSSHKey:
        item = self._store.find(key_id)
        try:
            org = self._orgs.get_by_key(principal, item.organization, Action.MANAGE_ORGANIZATION) if item else None
        except NotFound:
            org = None
        if item is None or org is None or not _belongs(item, org.id):
            raise NotFound(f"ssh key {key_id} not found")
        return item

    def list(self, principal: Principal, organization: str) -> builtins.list[SSHKey]:
        org = self._orgs.get(principal, organization, Action.MANAGE_ORGANIZATION)
        return [item.public for item in self._store.of_organization(org.key) if _belongs(item, org.id)]

    def get(self, principal: Principal, key_id: str) -> SSHKey:
        return self._item(principal, key_id).public

    def create(self, principal: Principal, organization: str, attrs: dict[str, Any]) -> SSHKey:
        org = self._orgs.get(principal, organization, Action.MANAGE_ORGANIZATION)
        name, value = _name(attrs), _value(attrs)
        key_id, now = new_id("sshkey"), clock.now_iso()
        ciphertext = self._encryptor.encrypt(value, self._context(org.key, key_id))
        item = StoredSSHKey(key_id, org.key, org.id, name, now, ciphertext, version=1)
        self._store.create(item)
        return item.public

    def update(self, principal: Principal, key_id: str, attrs: dict[str, Any]) -> SSHKey:
        item = self._item(principal, key_id)
        version = item.version
        if "name" in attrs:
            item = dataclasses.replace(item, name=_name(attrs))
        if "value" in attrs:
            ciphertext = self._encryptor.encrypt(_value(attrs), self._context(item.organization, key_id))
            item = dataclasses.replace(item, ciphertext=ciphertext)
        item = dataclasses.replace(item, version=version + 1)
        if not self._store.replace(item, version):
            raise Conflict(f"ssh key {key_id} changed concurrently; retry")
        return item.public

    def delete(self, principal: Principal, key_id: str) -> None:
        """Deletes the key and unassigns it from every workspace of its organization that used it."""
        item = self._item(principal, key_id)
        self._store.delete(key_id)
        for workspace_id in self._workspaces.ids_in(item.organization):
            ws = self._workspaces.load(workspace_id)
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
        return self._encryptor.decrypt(item.ciphertext, self._context(item.organization, item.id))

    def _usable(self, ws: Workspace, key_id: str | None) -> StoredSSHKey | None:
        """The key when it belongs to the workspace's organization (this one, not an earlier namesake)."""
        item = self._store.find(key_id)
        if item is None or item.organization != ws.organization:
            return None
        return item if _belongs(item, self._orgs.by_key(ws.organization).id) else None


def _belongs(item: StoredSSHKey, organization_id: str) -> bool:
    return item.organization_id == organization_id


def _assigned(ws: Workspace, key_id: str | None, only_if: str | None = None) -> Workspace:
    extra = dict(ws.extra)
    if only_if is not None and extra.get(WORKSPACE_FIELD) != only_if:
        return ws
    if key_id is None:
        extra.pop(WORKSPACE_FIELD, None)
    else:
        extra[WORKSPACE_FIELD] = key_id
    return dataclasses.replace(ws, extra=extra)
