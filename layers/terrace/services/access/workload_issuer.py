"""Terrace as an OpenID Connect issuer of workload identity tokens (`domain/workload_identity.py`).

The issuer is the deployment's public URL; `/.well-known/openid-configuration` names `/.well-known/jwks`, which
publishes the public half of every key not retired. Private keys live in the `SigningKeyStore` port only (a 0600
file beside `master.key`, SSM SecureString on AWS), never in the table or a log.

Rotation (`rotate`, `terrace workload-identity rotate`): a new key is published at once and signs from
`PUBLISH_LEAD_S` later (every process's cache, and verifiers' copies of the JWKS, have seen it by then); the keys
it supersedes keep being published until their tokens have expired (`retire_at`: the lead, the longest token
life and the grace asked for), then they drop out of the JWKS and are deleted (`retire`: by the next signature or
rotation, or `terrace workload-identity keys`).
So while a rotation runs two keys are published and tokens of both verify.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable
from typing import Any

from terrace.adapters.signing_keys import SigningKey, SigningKeyStore

ALGORITHM = "RS256"
KEY_BITS = 2048
CACHE_S = 60.0  # a process reads the stored keys at most this often
PUBLISH_LEAD_S = 2 * CACHE_S


class WorkloadIssuer:
    def __init__(
        self,
        store: SigningKeyStore,
        public_url: str,
        *,
        token_ttl_s: int,
        clock: Callable[[], float] = time.time,
        cache_s: float = CACHE_S,
    ) -> None:
        self._store, self.issuer = store, public_url.rstrip("/")
        self._token_ttl_s, self._clock, self._cache_s = token_ttl_s, clock, cache_s
        self._cached: tuple[float, list[SigningKey]] | None = None
        self._lock = threading.Lock()

    # -- reads ---------------------------------------------------------------------------------------------

    def discovery(self) -> dict[str, Any]:
        return {
            "issuer": self.issuer,
            "jwks_uri": f"{self.issuer}/.well-known/jwks",
            "response_types_supported": ["id_token"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": [ALGORITHM],
            "scopes_supported": ["openid"],
            "claims_supported": ["sub", "aud", "exp", "iat", "iss", "jti", "nbf"],
        }

    def jwks(self) -> dict[str, Any]:
        """The public keys of every key not retired (newest first). Reads only: no key is made here."""
        now = self._clock()
        return {"keys": [_public_jwk(k) for k in self._keys() if k.retire_at is None or k.retire_at > now]}

    def keys(self) -> list[SigningKey]:
        """Every stored key, newest first (the CLI lists their kids and dates, never their private half)."""
        return self._keys(fresh=True)

    # -- signing -------------------------------------------------------------------------------------------

    def sign(self, claims: dict[str, Any]) -> str:
        key = self._signer()
        header = {"alg": ALGORITHM, "typ": "JWT", "kid": key.kid}
        from joserfc import jwt  # a cold start of the API does not load joserfc until a job is claimed

        return jwt.encode(header, claims, _loaded(key.private_pem))

    def _signer(self) -> SigningKey:
        now = self._clock()
        if any(k.retire_at is not None and k.retire_at <= now for k in self._keys()):
            self.retire()  # a claim (a write) deletes the keys past retirement; reads only stop publishing them
        usable = [k for k in self._keys() if k.signs_from <= now and (k.retire_at is None or k.retire_at > now)]
        if usable:
            return usable[0]
        with self._lock:  # the first token ever: a key that signs at once (no verifier knows any key yet)
            usable = [k for k in self._keys(fresh=True) if k.signs_from <= now]
            if usable:
                return usable[0]
            key = _new_key(now, signs_from=now)
            self._store.put(key)
            self._cached = None
            return key

    # -- rotation ------------------------------------------------------------------------------------------

    def rotate(self, grace_s: float = 0.0) -> SigningKey:
        """A new key, published now and signing from `PUBLISH_LEAD_S` on; the current ones retire once every token
        they may still sign has expired (plus `grace_s`). Keys already past retirement are deleted."""
        now = self._clock()
        retire_at = now + PUBLISH_LEAD_S + self._token_ttl_s + max(0.0, grace_s)
        with self._lock:
            self.retire()
            fresh = _new_key(now, signs_from=now + PUBLISH_LEAD_S)
            self._store.put(fresh)  # published before anything else changes
            for key in self._keys(fresh=True):
                if key.kid != fresh.kid and (key.retire_at is None or key.retire_at > retire_at):
                    self._store.put(_with_retirement(key, retire_at))
            self._cached = None
        return fresh

    def trim(self) -> SigningKey:
        """Keep only the newest key, signing from now on (made first when there is none); the others are deleted
        at once, so tokens they signed stop verifying (the site admin's `trim-key`, after a rotation)."""
        now = self._clock()
        with self._lock:
            keys = self._keys(fresh=True)
            newest = keys[0] if keys else _new_key(now, signs_from=now)
            kept = SigningKey(newest.kid, newest.private_pem, newest.created_at, min(newest.signs_from, now))
            self._store.put(kept)
            for key in keys[1:]:
                self._store.delete(key.kid)
            self._cached = None
        return kept

    def retire(self) -> list[str]:
        """Deletes the keys past their retirement; returns their kids."""
        now = self._clock()
        gone = [k.kid for k in self._keys(fresh=True) if k.retire_at is not None and k.retire_at <= now]
        for kid in gone:
            self._store.delete(kid)
        self._cached = None
        return gone

    def _keys(self, fresh: bool = False) -> list[SigningKey]:
        now = time.monotonic()
        cached = self._cached
        if fresh or cached is None or not cached[1] or now - cached[0] >= self._cache_s:  # none yet: look again
            keys = sorted(self._store.load(), key=lambda k: (k.signs_from, k.created_at, k.kid), reverse=True)
            self._cached = cached = (now, keys)
        return cached[1]


def _new_key(now: float, signs_from: float) -> SigningKey:
    from joserfc.jwk import RSAKey

    key = RSAKey.generate_key(KEY_BITS, private=True)
    pem = key.as_pem(private=True)
    return SigningKey(
        kid=key.thumbprint(),
        private_pem=pem.decode() if isinstance(pem, bytes) else str(pem),
        created_at=now,
        signs_from=signs_from,
    )


def _with_retirement(key: SigningKey, retire_at: float) -> SigningKey:
    return SigningKey(key.kid, key.private_pem, key.created_at, key.signs_from, retire_at)


@functools.lru_cache(maxsize=8)
def _loaded(private_pem: str) -> Any:
    """The key parsed, once per process and key: loading a PEM checks the RSA key whole (tens of milliseconds of
    CPU), which every signature (several per job claimed) and every JWKS read would otherwise pay again. A key
    holds no state a signature changes; at most a rotation's few keys are kept."""
    from joserfc.jwk import RSAKey

    return RSAKey.import_key(private_pem)


def _public_jwk(key: SigningKey) -> dict[str, Any]:
    public = dict(_loaded(key.private_pem).as_dict(private=False))
    public.update(kid=key.kid, use="sig", alg=ALGORITHM)
    return public
