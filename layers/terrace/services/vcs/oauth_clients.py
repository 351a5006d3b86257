"""OAuth clients of an organization (`/organizations/:org/oauth-clients`, `/oauth-clients/:id`) and their OAuth
tokens (`/oauth-clients/:id/oauth-tokens`, `/oauth-tokens/:id`).

Every credential (`oauth-token-string`, `secret`, `private-key`, a token's `ssh-key`) is encrypted as sensitive
variables are, with an encryption context naming the organization and the resource, and never leaves through the
API: only this area's forge calls decrypt a token (`credential`). Reading clients and tokens is open to the
organization's members (a workspace admin picks a token to connect a repository); changing them takes
`manage-vcs-settings`.
"""

from __future__ import annotations

import builtins
import dataclasses
from typing import Any

from terrace.adapters.encryptor import Encryptor
from terrace.adapters.table import ConditionFailed
from terrace.domain import clock
from terrace.domain import vcs as model
from terrace.domain.errors import BadRequest, Invalid, NotFound
from terrace.domain.ids import new_id
from terrace.domain.organizations import Organization
from terrace.domain.principal import Principal
from terrace.domain.vcs import OAuthClient, OAuthToken
from terrace.services.access.authz import Action
from terrace.services.access.organizations import OrganizationService
from terrace.services.access.projects import ProjectService
from terrace.services.optimistic import optimistic
from terrace.services.vcs.oauth_exchange import Grant, TokenEndpoint, callback_url
from terrace.services.vcs.store import StoredClient, StoredToken, VcsStore

_CLIENT_SECRETS = ("secret", "private-key")
REFRESH_MARGIN_S = 300  # an expiring credential is refreshed this long before it expires


class OAuthClientService:
    def __init__(
        self, store: VcsStore, encryptor: Encryptor, organizations: OrganizationService, projects: ProjectService,
        endpoint: TokenEndpoint | None = None, public_url: str = "",
    ) -> None:  # fmt: skip
        self._store, self._encryptor = store, encryptor
        self._orgs, self._projects = organizations, projects
        self._endpoint, self._public_url = endpoint, public_url

    # reads ------------------------------------------------------------------------------
    def _client(
        self, principal: Principal, client_id: str, action: Action = Action.READ_VCS, organization: str | None = None
    ) -> StoredClient:
        """The client when the caller may `action` on it; with `organization` (a page's organization by name), a
        client of another organization is not found either."""
        item = self._store.client(client_id)
        if item is not None and organization is not None:
            org: Organization | None = self._orgs.get(principal, organization, action)
        else:
            org = self._org_of(principal, item.public.organization, action) if item else None
        if item is None or org is None or item.organization_id != org.id:
            raise NotFound(f"oauth client {client_id} not found")
        return item

    def _token(self, principal: Principal, token_id: str, action: Action = Action.READ_VCS) -> StoredToken:
        item = self._store.token(token_id)
        org = self._org_of(principal, item.public.organization, action) if item else None
        if item is None or org is None or item.organization_id != org.id:
            raise NotFound(f"oauth token {token_id} not found")
        return item

    def _org_of(self, principal: Principal, org_key: str, action: Action) -> Organization | None:
        try:
            return self._orgs.get_by_key(principal, org_key, action)
        except NotFound:
            return None

    def list(self, principal: Principal, organization: str) -> builtins.list[OAuthClient]:
        org = self._orgs.get(principal, organization, Action.READ_VCS)
        return [c.public for c in self._store.clients_of(org.key) if c.organization_id == org.id]

    def get(self, principal: Principal, client_id: str) -> OAuthClient:
        return self._client(principal, client_id).public

    def tokens(self, principal: Principal, client_id: str) -> builtins.list[OAuthToken]:
        client = self._client(principal, client_id)
        return [t.public for t in self._store.tokens_of(client.public.id)]

    def tokens_of(self, principal: Principal, clients: builtins.list[OAuthClient]) -> builtins.list[OAuthToken]:
        """The tokens of clients the caller has read (`include=oauth_tokens`)."""
        return [t.public for c in clients for t in self._store.tokens_of(c.id)]

    def token(self, principal: Principal, token_id: str) -> OAuthToken:
        return self._token(principal, token_id).public

    def manageable(self, principal: Principal, client_id: str, organization: str | None = None) -> OAuthClient:
        """The client when the caller may change it (`manage-vcs-settings`) and, with `organization`, it is that
        organization's; NotFound otherwise."""
        return self._client(principal, client_id, Action.MANAGE_VCS, organization).public

    # writes -----------------------------------------------------------------------------
    def create(self, principal: Principal, organization: str, attrs: dict[str, Any], projects: Any) -> OAuthClient:
        org = self._orgs.get(principal, organization, Action.MANAGE_VCS)
        provider = model.check_provider(attrs)
        http_url, api_url = model.check_url(attrs, "http-url"), model.check_url(attrs, "api-url")
        key, private_key = model.check_text(attrs, "key"), model.check_secret(attrs, "private-key")
        model.check_credentials(provider, attrs)
        token_string = model.check_secret(attrs, "oauth-token-string")
        client_id, now = new_id("oc"), clock.now_iso()
        secrets = self._sealed(org.key, client_id, {"secret": model.check_secret(attrs, "secret"),
                                                    "private-key": private_key})  # fmt: skip
        token = None
        if token_string is not None:
            token_id = new_id("ot")
            sealed = self._encryptor.encrypt(token_string, self._token_context(org.key, token_id))
            token = StoredToken(OAuthToken(token_id, org.key, client_id, "", False, now), org.id, sealed, None, 1)
        public = OAuthClient(
            id=client_id, organization=org.key, name=model.check_name(attrs), service_provider=provider,
            http_url=http_url, api_url=api_url, key=key, rsa_public_key=model.check_text(attrs, "rsa-public-key", 8192),
            organization_scoped=model.check_bool(attrs, "organization-scoped", True),
            projects=tuple(self._project_ids(principal, org, projects)),
            token_ids=(token.public.id,) if token else (), created_at=now,
        )  # fmt: skip
        self._store.create_client(StoredClient(public, org.id, secrets, 1), token)
        return public

    def update(self, principal: Principal, client_id: str, attrs: dict[str, Any]) -> OAuthClient:
        def step() -> OAuthClient:
            item = self._client(principal, client_id, Action.MANAGE_VCS)
            c = item.public
            changes: dict[str, Any] = {}
            if "name" in attrs:
                changes["name"] = model.check_name(attrs)
            if "key" in attrs:
                changes["key"] = model.check_text(attrs, "key")
            if "rsa-public-key" in attrs:
                changes["rsa_public_key"] = model.check_text(attrs, "rsa-public-key", 8192)
            if "organization-scoped" in attrs:
                changes["organization_scoped"] = model.check_bool(attrs, "organization-scoped", c.organization_scoped)
            model.check_credentials(c.service_provider, attrs)
            secrets = dict(item.secrets)
            for name in _CLIENT_SECRETS:
                if name in attrs:
                    secrets.pop(name, None)
                    secrets.update(self._sealed(c.organization, c.id, {name: model.check_secret(attrs, name)}))
            if "oauth-token-string" in attrs:
                self._replace_credential(c, model.check_secret(attrs, "oauth-token-string"))
            updated = item.replaced(item.version + 1, secrets, **changes)
            self._store.replace_client(updated, item.version)
            return updated.public

        return optimistic(step, exhausted=f"oauth client {client_id} changed concurrently; retry")

    def delete(self, principal: Principal, client_id: str, organization: str | None = None) -> None:
        """Delete the client; with `organization`, only when it is that organization's (NotFound otherwise)."""
        self._store.delete_client(self._client(principal, client_id, Action.MANAGE_VCS, organization))

    def change_projects(self, principal: Principal, client_id: str, projects: Any, *, add: bool) -> None:
        """`POST|DELETE /oauth-clients/:id/relationships/projects`."""

        def step() -> None:
            item = self._client(principal, client_id, Action.MANAGE_VCS)
            ids = self._project_ids(principal, self._orgs.by_key(item.public.organization), projects)
            now = list(item.public.projects)
            kept = [*now, *(p for p in ids if p not in now)] if add else [p for p in now if p not in ids]
            self._store.replace_client(item.replaced(item.version + 1, projects=tuple(kept)), item.version)

        optimistic(step, exhausted=f"oauth client {client_id} changed concurrently; retry")

    def update_token(self, principal: Principal, token_id: str, attrs: dict[str, Any]) -> OAuthToken:
        """`PATCH /oauth-tokens/:id`: its `ssh-key` (the private key clones of submodules use)."""

        def step() -> OAuthToken:
            item = self._token(principal, token_id, Action.MANAGE_VCS)
            ssh_key = item.ssh_key
            if "ssh-key" in attrs:
                value = model.check_secret(attrs, "ssh-key")
                context = {**self._token_context(item.public.organization, token_id), "use": "ssh-key"}
                ssh_key = self._encryptor.encrypt(value, context) if value else None
            public = OAuthToken(**{**item.public.__dict__, "has_ssh_key": bool(ssh_key)})
            updated = dataclasses.replace(item, public=public, ssh_key=ssh_key, version=item.version + 1)
            self._store.replace_token(updated, item.version)
            return public

        return optimistic(step, exhausted=f"oauth token {token_id} changed concurrently; retry")

    def delete_token(self, principal: Principal, token_id: str) -> None:
        item = self._token(principal, token_id, Action.MANAGE_VCS)
        self._store.delete_token(token_id)

        def step() -> None:
            client = self._store.client(item.public.client_id)
            if client is not None and token_id in client.public.token_ids:
                kept = tuple(t for t in client.public.token_ids if t != token_id)
                self._store.replace_client(client.replaced(client.version + 1, token_ids=kept), client.version)

        optimistic(step, exhausted=f"oauth client {item.public.client_id} changed concurrently; retry")

    # for this area only -----------------------------------------------------------------
    def usable_token(self, org_key: str, token_id: str) -> tuple[OAuthClient, OAuthToken] | None:
        """The token and its client when both are the organization's (this one, not an earlier namesake)."""
        token = self._store.token(token_id)
        client = self._store.client(token.public.client_id) if token else None
        org_id = self._orgs.by_key(org_key).id
        if token is None or client is None or token.public.organization != org_key or token.organization_id != org_id:
            return None
        return client.public, token.public

    def credential(self, token: OAuthToken) -> str:
        """The forge credential of a token, for this area's forge calls only (never returned by the API); one that
        expires within REFRESH_MARGIN_S is refreshed first (an OAuth application's)."""
        item = self._store.token(token.id)
        if item is None:
            raise NotFound(f"oauth token {token.id} not found")
        if item.expires_at is not None and item.refresh and item.expires_at - REFRESH_MARGIN_S <= int(clock.epoch()):
            item = self._refreshed(item)
        return self._encryptor.decrypt(item.ciphertext, self._token_context(item.public.organization, token.id))

    def connect(self, client_id: str, grant: Grant) -> OAuthToken:
        """The credential an OAuth application's flow obtained (`oauth_flow.py`, which checked the caller) as the
        client's token: its first token made, else that one's credential replaced (workspaces keep it)."""

        def step() -> OAuthToken:
            client = self._store.client(client_id)
            if client is None:
                raise NotFound(f"oauth client {client_id} not found")
            c = client.public
            existing = self._store.token(c.token_ids[0]) if c.token_ids else None
            if existing is not None:
                updated = self._granted(existing, grant, existing.version + 1)
                self._store.replace_token(updated, existing.version)
                return updated.public
            token_id = new_id("ot")
            public = OAuthToken(token_id, c.organization, c.id, "", False, clock.now_iso())
            token = self._granted(StoredToken(public, client.organization_id, "", None, 1), grant, 1)
            self._store.add_token(client.replaced(client.version + 1, token_ids=(token_id,)), client.version, token)
            return public

        return optimistic(step, exhausted=f"oauth client {client_id} changed concurrently; retry")

    def client_secret(self, client: OAuthClient) -> str | None:
        """The OAuth application's secret, for the token endpoint's calls only."""
        item = self._store.client(client.id)
        sealed = item.secrets.get("secret") if item else None
        if not sealed:
            return None
        context = {"organization": client.organization, "oauth-client": client.id, "use": "secret"}
        return self._encryptor.decrypt(sealed, context)

    def _granted(self, item: StoredToken, grant: Grant, version: int) -> StoredToken:
        context = self._token_context(item.public.organization, item.public.id)
        sealed = self._encryptor.encrypt(grant.access_token, context)
        refresh = self._encryptor.encrypt(grant.refresh_token, {**context, "use": "refresh"}) \
            if grant.refresh_token else None  # fmt: skip
        return dataclasses.replace(item, ciphertext=sealed, refresh=refresh, expires_at=grant.expires_at,
                                   version=version)  # fmt: skip

    def _refreshed(self, item: StoredToken) -> StoredToken:
        """The token after its refresh; when another process refreshed it meanwhile (the refresh token it spent is
        then no longer valid), theirs."""
        client = self._store.client(item.public.client_id)
        secret = self.client_secret(client.public) if client else None
        if self._endpoint is None or client is None or secret is None or not item.refresh:
            return item
        context = {**self._token_context(item.public.organization, item.public.id), "use": "refresh"}
        refresh = self._encryptor.decrypt(item.refresh, context)
        redirect = callback_url(self._public_url, client.public.id)
        try:
            grant = self._endpoint.refresh(client.public, secret, refresh, redirect, int(clock.epoch()))
            updated = self._granted(item, grant, item.version + 1)
            self._store.replace_token(updated, item.version)
            return updated
        except (BadRequest, ConditionFailed):
            return self._store.token(item.public.id) or item

    # helpers ----------------------------------------------------------------------------
    @staticmethod
    def _token_context(org_key: str, token_id: str) -> dict[str, str]:
        return {"organization": org_key, "oauth-token": token_id}

    def _sealed(self, org_key: str, client_id: str, values: dict[str, str | None]) -> dict[str, str]:
        context = {"organization": org_key, "oauth-client": client_id}
        return {name: self._encryptor.encrypt(v, {**context, "use": name}) for name, v in values.items() if v}

    def _replace_credential(self, client: OAuthClient, value: str | None) -> None:
        if value is None:
            raise Invalid("oauth-token-string must not be empty", pointer="/data/attributes/oauth-token-string")
        for token_id in client.token_ids:
            item = self._store.token(token_id)
            if item is not None:
                sealed = self._encryptor.encrypt(value, self._token_context(client.organization, token_id))
                updated = dataclasses.replace(item, ciphertext=sealed, refresh=None, expires_at=None,
                                              version=item.version + 1)  # fmt: skip
                self._store.replace_token(updated, item.version)

    def _project_ids(self, principal: Principal, org: Organization, projects: Any) -> builtins.list[str]:
        if projects is None:
            return []
        if not isinstance(projects, list) or not all(isinstance(p, str) for p in projects):
            raise Invalid("projects must be a list of project references", pointer="/data/relationships/projects")
        for project_id in projects:
            if self._projects.get(principal, project_id).organization != org.key:
                raise NotFound(f"project {project_id} not found")
        return list(dict.fromkeys(projects))
