"""A workspace's, a policy set's or a registry module's repository (`vcs-repo`): connecting registers a webhook on
the repository with a secret of its own (`POST /repos/{o}/{r}/hooks`, GitLab's `POST /projects/:id/hooks`), kept
encrypted beside the workspace
(`Connection`, with the forge's kind); disconnecting (`vcs-repo: null`, another repository, deleting the workspace)
deletes the hook. The workspace keeps what the API shows of it
(`Workspace.extra["vcs-repo"]`, no secret); the workspace service calls this through its `RepositoryLink` port, the
policy set service through its `OwnerLink` (`services/workspaces/repository_link.py`), keyed by the owner's id.
A workspace's repository reached through the deployment's GitHub App (`github-app-installation-id`, `github_app.py`)
gets no hook of its own: the App's one webhook delivers its pushes and pull requests (`app_webhooks.py`), and its
forge calls use an installation token of that repository only."""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable
from typing import Any

from terrace.adapters.encryptor import Encryptor
from terrace.adapters.forge import Forge, ForgeAccess, ForgeError
from terrace.domain import vcs as model
from terrace.domain.errors import Invalid, NotFound
from terrace.domain.principal import Principal
from terrace.domain.vcs import OAuthClient, OAuthToken
from terrace.domain.workspace import Workspace
from terrace.services.access.authz import Action
from terrace.services.access.organizations import OrganizationService
from terrace.services.vcs.github_app import PREFIX as GHAIN
from terrace.services.vcs.github_app import GitHubAppInstallations
from terrace.services.vcs.oauth_clients import OAuthClientService
from terrace.services.vcs.store import Connection, VcsStore

log = logging.getLogger("terrace.vcs")
CONNECTED = "vcs.connected"  # a policy set or registry module connected: its first version from the branch's head
WEBHOOK_PATH = "/api/vcs/webhooks/"  # + the workspace id: the public route of deliveries (web/routers/vcs_webhooks.py)


class RepositoryConnections:
    def __init__(
        self,
        store: VcsStore,
        encryptor: Encryptor,
        forge: Forge,
        organizations: OrganizationService,
        oauth_clients: OAuthClientService,
        public_url: str,
        github_app: GitHubAppInstallations,
        publish: Callable[[dict[str, Any]], None] | None = None,
    ) -> None:
        self._store, self._encryptor, self._forge, self._app = store, encryptor, forge, github_app
        self._orgs, self._clients, self._public_url = organizations, oauth_clients, public_url.rstrip("/")
        self._publish = publish

    def connect(self, principal: Principal, ws: Workspace, raw: Any) -> dict[str, Any] | None:
        """What `ws` shows as its `vcs-repo` once `raw` is applied (None: no repository); the webhook registered or
        deleted on the forge before the workspace is written. The caller checked that `principal` may change `ws`."""
        return self.connect_owner(principal, ws.organization, ws.id, raw, ws.extra.get(model.VCS_REPO))

    def connect_owner(
        self, principal: Principal, organization: str, owner_id: str, raw: Any, current: dict[str, Any] | None
    ) -> dict[str, Any] | None:
        """The same for any owner of a repository connection (a workspace, a policy set, a registry module: its id),
        `current` being what it shows now."""
        if raw is None or raw == {}:  # an empty object names no repository, as null does
            self.release(owner_id)
            return None
        request = model.check_repo(_merged(raw, current))
        self._orgs.get_by_key(principal, organization, Action.READ_VCS)
        if request.installation_id is not None:
            if not owner_id.startswith("ws-"):  # the App's webhook delivers to workspaces only
                raise Invalid("a policy set or a registry module connects through an OAuth token",
                              pointer="/data/attributes/vcs-repo/github-app-installation-id")  # fmt: skip
            return self._connect_app(organization, owner_id, request, current)
        found = self._clients.usable_token(organization, request.oauth_token_id)
        if found is None:
            raise NotFound(f"oauth token {request.oauth_token_id} not found")
        client, token = found
        if client.service_provider not in model.DRIVEN:
            raise Invalid(f"{client.display_name} repositories are not supported yet",
                          pointer="/data/attributes/vcs-repo/oauth-token-id")  # fmt: skip
        kind = model.forge_kind(client.service_provider)
        if not model.identifier_fits(kind, request.identifier):
            shape = model.IDENTIFIER_SHAPES.get(kind, "<owner>/<repository>")
            raise Invalid(f"vcs-repo identifier must be {shape} on {client.display_name}",
                          pointer="/data/attributes/vcs-repo/identifier")  # fmt: skip
        access = ForgeAccess(client.api_url, self._clients.credential(token), kind)
        kept = self._store.connection(owner_id)
        same = kept is not None and (kept.identifier, kept.token_id) == (request.identifier, token.id)
        if not same:
            try:
                repository = self._forge.repository(access, request.identifier)
                secret = secrets.token_hex(32)
                hook_id = self._forge.create_hook(access, request.identifier, self.webhook_url(owner_id), secret)
            except ForgeError as exc:
                raise Invalid(f"the repository {request.identifier} cannot be connected: {exc.detail}",
                              pointer="/data/attributes/vcs-repo/identifier") from exc  # fmt: skip
            sealed = self._encryptor.encrypt(secret, _context(organization, owner_id))
            self.release(owner_id)
            self._store.put_connection(
                Connection(owner_id, organization, token.id, request.identifier, hook_id, sealed, kind=kind)
            )
            html_url = repository.html_url
        else:
            html_url = (current or {}).get("repository-http-url", "")
        return _shown(request, client, token, html_url, self.webhook_url(owner_id))

    def announce(self, owner_id: str) -> None:
        """A `connected` event for an owner written with a new connection (or a new branch): the events worker makes
        its first version from the tracked branch's head (`services/workflows/vcs_sources.py`)."""
        if self._publish is not None:
            self._publish({"type": CONNECTED, "owner_id": owner_id})

    def _connect_app(
        self, organization: str, owner_id: str, request: model.RepoRequest, current: Any
    ) -> dict[str, Any]:
        ghain = str(request.installation_id)
        if request.identifier.count("/") != 1:
            raise Invalid("vcs-repo identifier must be <owner>/<repository> on GitHub",
                          pointer="/data/attributes/vcs-repo/identifier")  # fmt: skip
        installation = self._app.usable(organization, ghain)  # NotFound: not this organization's to use
        kept = self._store.connection(owner_id)
        if kept is None or (kept.identifier, kept.token_id) != (request.identifier, ghain):
            try:
                access = self._app.access(organization, ghain, request.identifier)
                html_url = self._forge.repository(access, request.identifier).html_url
            except ForgeError as exc:
                raise Invalid(f"the repository {request.identifier} cannot be connected through the GitHub App "
                              f"installation of {installation.account}: {exc.detail}",
                              pointer="/data/attributes/vcs-repo/identifier") from exc  # fmt: skip
            self.release(owner_id)
            self._store.put_connection(
                Connection(owner_id, organization, ghain, request.identifier, "", "", kind="github")
            )
        else:
            html_url = (current or {}).get("repository-http-url", "")
        return {"identifier": request.identifier, "display-identifier": request.identifier, "branch": request.branch,
                "oauth-token-id": None, "github-app-installation-id": ghain,
                "ingress-submodules": request.ingress_submodules, "tags-regex": request.tags_regex,
                "repository-http-url": html_url, "service-provider": "github", "webhook-url": None}  # fmt: skip

    def choices(self, principal: Principal, org_key: str) -> list[tuple[str, str]]:
        """What a workspace of the organization may connect through, for a form: (OAuth token or `ghain-` id,
        label), the tokens of GitHub-shaped and GitLab clients first, then the GitHub App's usable installations."""
        org = self._orgs.get_by_key(principal, org_key, Action.READ_VCS)
        tokens = [(token_id, f"{c.display_name}{' · ' + c.name if c.name else ''} ({token_id})")
                  for c in self._clients.list(principal, org.name) if c.service_provider in model.DRIVEN
                  for token_id in c.token_ids]  # fmt: skip
        apps = [(f"{GHAIN}{i.id}", f"GitHub App · {i.account} ({GHAIN}{i.id})") for i in self._app.list(principal)
                if self._app.may_use(org.name, i)]  # fmt: skip
        return tokens + apps

    def disconnect(self, ws: Workspace) -> None:
        self.release(ws.id)

    def release(self, workspace_id: str) -> None:
        """Deletes the workspace's webhook (a forge that fails is logged: the connection goes anyway)."""
        kept = self._store.connection(workspace_id)
        if kept is None:
            return
        found = (
            None if kept.token_id.startswith(GHAIN) else self._clients.usable_token(kept.organization, kept.token_id)
        )
        if found is not None:
            access = _access(found[0], self._clients.credential(found[1]))
            try:
                self._forge.delete_hook(access, kept.identifier, kept.hook_id)
            except ForgeError as exc:
                log.warning("workspace %s: webhook %s of %s not deleted: %s", workspace_id, kept.hook_id,
                            kept.identifier, exc.detail)  # fmt: skip
        self._store.delete_connection(workspace_id)

    def forget_organization(self, org_key: str) -> None:
        """The organization's OAuth clients and tokens (its workspaces released their hooks as they went)."""
        self._store.delete_all_of(organization=org_key)

    # for this area's webhook and ingress ------------------------------------------------------
    def webhook_url(self, workspace_id: str) -> str:
        return f"{self._public_url}{WEBHOOK_PATH}{workspace_id}"

    def secret(self, connection: Connection) -> str:
        return self._encryptor.decrypt(connection.secret, _context(connection.organization, connection.workspace_id))

    def access(self, connection: Connection) -> tuple[str, ForgeAccess] | None:
        """The connection's service provider and forge access (None: its token or installation is gone)."""
        if connection.token_id.startswith(GHAIN):
            try:
                return "github", self._app.access(connection.organization, connection.token_id, connection.identifier)
            except (NotFound, ForgeError) as exc:
                log.warning("workspace %s: GitHub App installation %s not usable: %s", connection.workspace_id,
                            connection.token_id, getattr(exc, "detail", exc))  # fmt: skip
                return None
        found = self._clients.usable_token(connection.organization, connection.token_id)
        if found is None:
            return None
        return found[0].service_provider, _access(found[0], self._clients.credential(found[1]))

    def connection(self, workspace_id: str) -> Connection | None:
        return self._store.connection(workspace_id)


def _context(organization: str, owner_id: str) -> dict[str, str]:
    return {"organization": organization, "vcs-connection": owner_id}


_KEPT = ("identifier", "branch", "ingress-submodules", "tags-regex")
_THROUGH = ("oauth-token-id", "github-app-installation-id")


def _merged(raw: Any, current: Any) -> Any:
    """A partial `vcs-repo` of an update (HCP's: `{"tags-regex": ...}` alone) over the connected repository: what
    it leaves out is kept; naming a token or an installation replaces the other."""
    if not isinstance(raw, dict) or not isinstance(current, dict):
        return raw
    kept = {k: current[k] for k in _KEPT if k in current}
    if not any(raw.get(k) for k in _THROUGH):
        kept.update({k: current[k] for k in _THROUGH if current.get(k)})
    return {**kept, **raw}


def _access(client: OAuthClient, credential: str) -> ForgeAccess:
    return ForgeAccess(client.api_url, credential, model.forge_kind(client.service_provider))


def _shown(
    request: model.RepoRequest, client: OAuthClient, token: OAuthToken, html_url: str, hook: str
) -> dict[str, Any]:
    return {
        "identifier": request.identifier,
        "display-identifier": request.identifier,
        "branch": request.branch,
        "oauth-token-id": token.id,
        "ingress-submodules": request.ingress_submodules,
        "tags-regex": request.tags_regex,
        "repository-http-url": html_url or f"{client.http_url}/{request.identifier}",
        "service-provider": client.service_provider,
        "webhook-url": hook,
    }
