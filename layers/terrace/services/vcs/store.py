"""Storage of the VCS area: OAuth clients (`oc-…` / `oauth-client`, listed under gsi1 `org#<org key>#oauth-clients`
by `created#id`) and OAuth tokens (`ot-…` / `oauth-token`, listed under gsi1 `oc#<client id>#oauth-tokens`).
Secrets only as ciphertext; the organization by its key and by its id (a later namesake never gets them)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from terrace.adapters.table import ConditionFailed, Put, Table
from terrace.domain.ids import looks_like
from terrace.domain.vcs import OAuthClient, OAuthToken
from terrace.services.vcs.store_comments import CommentStore

CLIENT, TOKEN, CONNECTION, DELIVERY = "oauth-client", "oauth-token", "vcs-connection", "vcs-delivery"
OAUTH_STATE = "vcs-oauth-state"  # a spent state of an OAuth application's browser flow (`oauth_flow.py`)
OWNERS = ("ws", "polset", "mod")  # what may own a repository connection: workspaces, policy sets, registry modules
DELIVERY_KEPT_S = 7 * 24 * 3600  # a delivery id is remembered this long (GitHub redelivers within days)
COMMIT_STATE = "vcs-commit-state#"  # + a commit sha: what the workspace's run shows on it (`aggregated_statuses.py`)
COMMIT_STATE_KEPT_S = 30 * 24 * 3600  # a commit's aggregated status counts a workspace this long after its last run


def _clients(org_key: str) -> str:
    return f"org#{org_key}#oauth-clients"


def _app_repo(ghain_id: str, identifier: str) -> str:
    return f"ghain#{ghain_id}#{identifier.lower()}#vcs-connections"


def _commit(org_key: str, sha: str) -> str:
    return f"commit#{org_key}#{sha}"


def _tokens(client_id: str) -> str:
    return f"oc#{client_id}#oauth-tokens"


@dataclass(frozen=True)
class StoredClient:
    public: OAuthClient
    organization_id: str | None
    secrets: dict[str, str]  # attribute name -> ciphertext (`secret`, `private-key`)
    version: int

    def replaced(self, version: int, secrets: dict[str, str] | None = None, **changes: Any) -> StoredClient:
        public = dataclasses.replace(self.public, **changes)
        return StoredClient(public, self.organization_id, self.secrets if secrets is None else secrets, version)


@dataclass(frozen=True)
class Connection:
    """A workspace's repository connection: the webhook registered for it and its secret (ciphertext)."""

    workspace_id: str
    organization: str
    token_id: str
    identifier: str
    hook_id: str
    secret: str
    version: int = 1
    kind: str = "github"  # the forge's API (`domain/vcs.py: forge_kind`): how its deliveries are verified


@dataclass(frozen=True)
class StoredToken:
    public: OAuthToken
    organization_id: str | None
    ciphertext: str  # the forge credential
    ssh_key: str | None  # ciphertext of the token's SSH key (clones of submodules)
    version: int
    refresh: str | None = None  # ciphertext of the refresh token of an expiring credential (an OAuth app's)
    expires_at: int | None = None  # when the credential expires (seconds since the epoch); None: never


def _client_from(item: dict[str, Any]) -> StoredClient:
    public = OAuthClient(
        id=item["pk"], organization=item["organization"], name=item.get("name"),
        service_provider=item["service_provider"], http_url=item["http_url"], api_url=item["api_url"],
        key=item.get("key", ""), rsa_public_key=item.get("rsa_public_key", ""),
        organization_scoped=bool(item.get("organization_scoped", True)), projects=tuple(item.get("projects", [])),
        token_ids=tuple(item.get("token_ids", [])), created_at=item["created_at"],
    )  # fmt: skip
    return StoredClient(public, item.get("organization_id"), dict(item.get("secrets", {})), int(item["version"]))


def _client_item(client: StoredClient) -> dict[str, Any]:
    c = client.public
    item: dict[str, Any] = {
        "pk": c.id, "sk": CLIENT, "organization": c.organization, "service_provider": c.service_provider,
        "http_url": c.http_url, "api_url": c.api_url, "key": c.key, "rsa_public_key": c.rsa_public_key,
        "organization_scoped": c.organization_scoped, "projects": list(c.projects), "token_ids": list(c.token_ids),
        "created_at": c.created_at, "secrets": client.secrets, "version": client.version,
        "gsi1pk": _clients(c.organization), "gsi1sk": f"{c.created_at}#{c.id}",
    }  # fmt: skip
    if c.name is not None:
        item["name"] = c.name
    if client.organization_id is not None:
        item["organization_id"] = client.organization_id
    return item


def _token_from(item: dict[str, Any]) -> StoredToken:
    public = OAuthToken(
        id=item["pk"], organization=item["organization"], client_id=item["client_id"],
        service_provider_user=item.get("service_provider_user", ""), has_ssh_key=bool(item.get("ssh_key")),
        created_at=item["created_at"],
    )  # fmt: skip
    expires = item.get("credential_expires_at")
    return StoredToken(public, item.get("organization_id"), item["ciphertext"], item.get("ssh_key"),
                       int(item["version"]), item.get("refresh"),
                       int(expires) if expires is not None else None)  # fmt: skip


def _token_item(token: StoredToken) -> dict[str, Any]:
    t = token.public
    item: dict[str, Any] = {
        "pk": t.id, "sk": TOKEN, "organization": t.organization, "client_id": t.client_id,
        "service_provider_user": t.service_provider_user, "created_at": t.created_at, "ciphertext": token.ciphertext,
        "version": token.version, "gsi1pk": _tokens(t.client_id), "gsi1sk": f"{t.created_at}#{t.id}",
    }  # fmt: skip
    if token.ssh_key:
        item["ssh_key"] = token.ssh_key
    if token.refresh:
        item["refresh"] = token.refresh
    if token.expires_at is not None:
        item["credential_expires_at"] = token.expires_at
    if token.organization_id is not None:
        item["organization_id"] = token.organization_id
    return item


class VcsStore:
    def __init__(self, table: Table) -> None:
        self._table = table
        self.comments = CommentStore(table)  # pull requests' plan comments (`store_comments.py`)

    # clients
    def client(self, client_id: str | None) -> StoredClient | None:
        item = self._table.get(client_id, CLIENT) if client_id and looks_like(client_id, "oc") else None
        return _client_from(item) if item else None

    def clients_of(self, org_key: str) -> list[StoredClient]:
        """Oldest first."""
        return [_client_from(item) for item in self._table.query(_clients(org_key), index="gsi1")]

    def create_client(self, client: StoredClient, token: StoredToken | None) -> None:
        """The client and its first token in one transaction."""
        items = [_client_item(client)] + ([_token_item(token)] if token else [])
        self._table.transact([Put(item, if_absent=True) for item in items])

    def replace_client(self, client: StoredClient, expected_version: int) -> None:
        """Raises the table's ConditionFailed when it changed since `expected_version`."""
        self._table.put(_client_item(client), if_version=expected_version)

    def delete_client(self, client: StoredClient) -> None:
        tokens = self._table.query(_tokens(client.public.id), index="gsi1")
        self._table.batch_delete([(item["pk"], item["sk"]) for item in tokens] + [(client.public.id, CLIENT)])

    # tokens
    def token(self, token_id: str | None) -> StoredToken | None:
        item = self._table.get(token_id, TOKEN) if token_id and looks_like(token_id, "ot") else None
        return _token_from(item) if item else None

    def tokens_of(self, client_id: str) -> list[StoredToken]:
        return [_token_from(item) for item in self._table.query(_tokens(client_id), index="gsi1")]

    def replace_token(self, token: StoredToken, expected_version: int) -> None:
        """Raises the table's ConditionFailed when it changed since `expected_version`."""
        self._table.put(_token_item(token), if_version=expected_version)

    def add_token(self, client: StoredClient, expected_version: int, token: StoredToken) -> None:
        """A new token of `client` (already listing it) in one transaction; ConditionFailed when the client changed."""
        self._table.transact([Put(_client_item(client), if_version=expected_version),
                              Put(_token_item(token), if_absent=True)])  # fmt: skip

    def spend_oauth_state(self, nonce: str, expires_at: int) -> bool:
        """Records an OAuth flow's state as used; False when it was before (a replay)."""
        item = {"pk": f"vcsoauthstate#{nonce}", "sk": OAUTH_STATE, "expires_at": expires_at}
        try:
            self._table.put(item, if_absent=True)
        except ConditionFailed:
            return False
        return True

    def delete_token(self, token_id: str) -> None:
        self._table.delete(token_id, TOKEN)

    # connections and deliveries
    def connection(self, workspace_id: str) -> Connection | None:
        owner = any(looks_like(workspace_id, kind) for kind in OWNERS)
        item = self._table.get(workspace_id, CONNECTION) if owner else None
        if item is None:
            return None
        return Connection(item["pk"], item["organization"], item["token_id"], item["identifier"], item["hook_id"],
                          item["secret"], int(item["version"]), str(item.get("kind") or "github"))  # fmt: skip

    def put_connection(self, c: Connection) -> None:
        item = {"pk": c.workspace_id, "sk": CONNECTION, "organization": c.organization, "token_id": c.token_id,
                "identifier": c.identifier, "hook_id": c.hook_id, "secret": c.secret, "version": c.version,
                "kind": c.kind}  # fmt: skip
        if c.token_id.startswith("ghain-"):  # found again by the App's deliveries: installation and repository
            item.update(gsi1pk=_app_repo(c.token_id, c.identifier), gsi1sk=c.workspace_id)
        self._table.put(item)

    def app_connections(self, ghain_id: str, identifier: str) -> list[Connection]:
        """The workspaces connected to `identifier` through the GitHub App installation `ghain_id`."""
        found = [self.connection(str(item["pk"])) for item in self._table.query(_app_repo(ghain_id, identifier),
                 index="gsi1")]  # fmt: skip
        return [c for c in found if c is not None]

    def delete_connection(self, workspace_id: str) -> None:
        self._table.delete(workspace_id, CONNECTION)

    def first_delivery(self, delivery_id: str, now_s: int) -> bool:
        """Records a webhook delivery id; False when it was recorded before (a replay)."""
        item = {"pk": f"vcsdelivery#{delivery_id}", "sk": DELIVERY, "expires_at": now_s + DELIVERY_KEPT_S}
        try:
            self._table.put(item, if_absent=True)
        except ConditionFailed:
            return False
        return True

    def put_commit_state(self, org_key: str, sha: str, workspace_id: str, state: str, now_s: int) -> None:
        """What the workspace's latest run on commit `sha` shows (listed under gsi1 `commit#<org key>#<sha>`)."""
        self._table.put({"pk": workspace_id, "sk": f"{COMMIT_STATE}{sha}", "state": state,
                         "gsi1pk": _commit(org_key, sha), "gsi1sk": workspace_id,
                         "expires_at": now_s + COMMIT_STATE_KEPT_S})  # fmt: skip

    def commit_states(self, org_key: str, sha: str, limit: int) -> dict[str, str]:
        """Each workspace's state on commit `sha` (at most `limit` workspaces)."""
        items = self._table.query(_commit(org_key, sha), index="gsi1", limit=limit)
        return {str(item["pk"]): str(item["state"]) for item in items}

    def delete_all_of(self, *, organization: str) -> None:
        for client in self.clients_of(organization):
            self.delete_client(client)
