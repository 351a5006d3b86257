"""The browser flow that connects an OAuth client made with `key`/`secret` (HCP's "Connect" of a VCS provider): the
signed-in owner is sent to the forge's authorize URL with a `state`, and the forge sends the browser back to the
client's `callback-url` with a code, which is exchanged for the token (`oauth_exchange.py`) and stored encrypted as
the client's OAuth token (`OAuthClientService.connect`), as an `oauth-token-string` client's is.

The state is signed and dated (itsdangerous, HMAC-SHA256 under the URL-signing secret with a salt of its own) and
names the client and a hash of the web session that started the flow: a callback is refused (400, nothing stored,
no call to the forge) when the state is not this server's, older than STATE_TTL_S, of another client or another
session, or was used before (each state's nonce is spent once, in the table, before the code is exchanged). Both
ends check `manage-vcs-settings` on the client through the Authorizer.
"""

from __future__ import annotations

import hashlib
import secrets
from typing import Any

from itsdangerous import BadSignature, URLSafeTimedSerializer

from terrace.domain import clock
from terrace.domain.errors import BadRequest, Invalid
from terrace.domain.principal import Principal
from terrace.domain.vcs import OAuthClient, OAuthToken
from terrace.services.vcs.oauth_clients import OAuthClientService
from terrace.services.vcs.oauth_exchange import TokenEndpoint, authorize_url, callback_url, connectable
from terrace.services.vcs.store import VcsStore

STATE_TTL_S = 600  # from the Connect button to the forge's answer
STATE_SALT = "terrace.vcs-oauth-state"
PARAM_MAX = 4096  # characters of a callback's `code`, `state` or `error`


def _session_hash(session_id: str) -> str:
    return hashlib.sha256(f"vcs-oauth {session_id}".encode()).hexdigest()


class OAuthFlow:
    def __init__(
        self, store: VcsStore, clients: OAuthClientService, endpoint: TokenEndpoint, signing_secret: str,
        public_url: str,
    ) -> None:  # fmt: skip
        self._store, self._clients, self._endpoint = store, clients, endpoint
        self._states = URLSafeTimedSerializer(signing_secret, salt=STATE_SALT,
                                              signer_kwargs={"digest_method": hashlib.sha256})  # fmt: skip
        self._public_url = public_url

    def start(self, principal: Principal, client_id: str, session_id: str, organization: str | None = None) -> str:
        """The forge's authorize URL for this session to connect the client (with `organization`, a client of
        another organization is not found)."""
        client = self._clients.manageable(principal, client_id, organization)
        self._secret(client)  # a client without an application's key and secret cannot be connected
        state = self._states.dumps({"c": client.id, "s": _session_hash(session_id), "n": secrets.token_urlsafe(24)})
        return authorize_url(client, callback_url(self._public_url, client.id), state)

    def finish(self, principal: Principal, client_id: str, params: dict[str, Any], session_id: str) -> OAuthToken:
        """The forge's answer (`code`, `state`, or `error`) for the client's token."""
        state, code, error = (_param(params, name) for name in ("state", "code", "error"))
        try:
            data = self._states.loads(state, max_age=STATE_TTL_S)
        except BadSignature as exc:  # also expired (SignatureExpired is one)
            raise BadRequest("the connection's state is not this server's or has expired: connect again") from exc
        if not isinstance(data, dict) or data.get("c") != client_id or not isinstance(data.get("n"), str):
            raise BadRequest("the connection's state is of another provider: connect again")
        if not secrets.compare_digest(str(data.get("s", "")), _session_hash(session_id)):
            raise BadRequest("the connection was started in another session: connect again")
        client = self._clients.manageable(principal, client_id)
        secret = self._secret(client)
        if not self._store.spend_oauth_state(data["n"], int(clock.epoch()) + STATE_TTL_S):
            raise BadRequest("the connection's state was used already: connect again")
        if error:
            raise BadRequest(f"the forge did not authorize the connection: {error[:200]}")
        if not code:
            raise BadRequest("the forge's answer has no code")
        grant = self._endpoint.exchange(client, secret, code, callback_url(self._public_url, client.id),
                                        int(clock.epoch()))  # fmt: skip
        return self._clients.connect(client.id, grant)

    def _secret(self, client: OAuthClient) -> str:
        if not connectable(client):
            raise Invalid(f"{client.display_name} clients are connected with oauth-token-string, not through the "
                          "browser", pointer="/data/attributes/service-provider")  # fmt: skip
        secret = self._clients.client_secret(client)
        if not client.key or not secret:
            raise Invalid("the client has no key and secret of an OAuth application to connect with",
                          pointer="/data/attributes/key")  # fmt: skip
        return secret


def _param(params: dict[str, Any], name: str) -> str:
    value = params.get(name, "")
    if not isinstance(value, str) or len(value) > PARAM_MAX:
        raise BadRequest(f"the forge's answer has a malformed {name}")
    return value
