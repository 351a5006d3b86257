"""Authlib's OpenID Connect client of one issuer and the translation of its failures into refused sign-ins.

Imported by `services/access/oidc.py` when single sign-on is configured: Authlib, joserfc and requests cost the
API Lambda's cold start ~0.2 s, so they load only where a sign-in can happen."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import requests
from authlib.integrations.base_client import BaseApp, OAuth2Mixin, OAuthError, OpenIDMixin
from authlib.integrations.requests_client import OAuth2Session
from authlib.oidc.core import CodeIDToken
from joserfc.errors import InvalidKeyIdError, JoseError

from terrace.domain.errors import Unauthenticated

if TYPE_CHECKING:
    from terrace.services.access.oidc import OidcConfig

ALGORITHMS = ["RS256", "RS384", "RS512", "ES256", "ES384", "PS256"]
LEEWAY_S = 60
HTTP_TIMEOUT_S = 10


@contextmanager
def refusals() -> Iterator[None]:
    """Whatever the issuer does wrong is a refused sign-in, never a 500: unreachable or an error status, an OAuth
    error, a token failing a check, a document that is not a JSON object or lacks an endpoint."""
    try:
        yield
    except InvalidKeyIdError as exc:
        raise Unauthenticated("the ID token is signed with a key the identity provider does not publish") from exc
    except JoseError as exc:
        raise Unauthenticated(f"the ID token was refused: {exc.description or exc.error}") from exc
    except OAuthError as exc:
        raise Unauthenticated(f"the identity provider refused the sign-in: {exc.error}") from exc
    except requests.HTTPError as exc:
        status = exc.response.status_code if exc.response is not None else "an error"
        raise Unauthenticated(f"the identity provider answered {status}") from exc
    except requests.RequestException as exc:
        raise Unauthenticated(f"the identity provider could not be reached: {exc}") from exc
    except (ValueError, KeyError, TypeError, RuntimeError) as exc:
        raise Unauthenticated(f"the identity provider's answer is not usable: {exc}") from exc


class Issuer(OAuth2Mixin, OpenIDMixin, BaseApp):
    """Authlib's OpenID Connect client of one issuer (its discovery document and JWKS cached for the process)."""

    client_cls = OAuth2Session

    def __init__(self, config: OidcConfig) -> None:
        super().__init__(
            None,  # no web framework: the state lives in the table, not in a framework session
            client_id=config.client_id,
            client_secret=config.client_secret,
            server_metadata_url=f"{config.issuer}/.well-known/openid-configuration",
            client_kwargs={"scope": "openid profile email", "code_challenge_method": "S256",
                           "default_timeout": HTTP_TIMEOUT_S, "max_redirects": 0},  # an issuer's redirect: refused
        )  # fmt: skip
        self.issuer = config.issuer

    def load_server_metadata(self) -> dict[str, Any]:
        metadata: dict[str, Any] = super().load_server_metadata()
        if str(metadata.get("issuer", "")).rstrip("/") != self.issuer:
            metadata.pop("_loaded_at", None)  # not kept: fetched again at the next sign-in
            raise Unauthenticated("the identity provider's metadata names another issuer")
        offered = metadata.get("id_token_signing_alg_values_supported") or ALGORITHMS
        metadata["id_token_signing_alg_values_supported"] = [alg for alg in offered if alg in ALGORITHMS]
        return metadata

    def verify_id_token(self, token: dict[str, Any], nonce: str, options: dict[str, Any]) -> Any:
        """The ID token's claims, checked by Authlib (signature, the `options` claims, nonce, at_hash)."""
        return self.parse_id_token(token, nonce, options, CodeIDToken, leeway=LEEWAY_S)
