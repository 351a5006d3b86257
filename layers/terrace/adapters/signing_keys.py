"""The workload identity issuer's signing keys (`services/access/workload_issuer.py`): RSA private keys that
never reach the table or a log. The embedded server keeps them in a file beside `master.key` (0600,
`file_signing_keys.py`), AWS in SSM SecureString parameters (`ssm_signing_keys.py`), unit tests in memory
(`memory_signing_keys.py`)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass(frozen=True)
class SigningKey:
    kid: str
    private_pem: str = field(repr=False)  # PKCS#8 PEM of an RSA key
    created_at: float  # epoch seconds
    signs_from: float  # published at once, used for signing from then on (verifiers' caches learn it first)
    retire_at: float | None = None  # set when a newer key supersedes it: unpublished (and deleted) from then on

    def to_json(self) -> str:
        return json.dumps(
            {"kid": self.kid, "private_pem": self.private_pem, "created_at": self.created_at,
             "signs_from": self.signs_from, "retire_at": self.retire_at}
        )  # fmt: skip

    @classmethod
    def from_json(cls, text: str) -> SigningKey:
        data: dict[str, Any] = json.loads(text)
        return cls(
            kid=str(data["kid"]),
            private_pem=str(data["private_pem"]),
            created_at=float(data["created_at"]),
            signs_from=float(data["signs_from"]),
            retire_at=None if data.get("retire_at") is None else float(data["retire_at"]),
        )


class SigningKeyStore(Protocol):
    def load(self) -> list[SigningKey]:
        """Every stored key (any order)."""
        ...

    def put(self, key: SigningKey) -> None:
        """Stores `key`, replacing the one with its kid."""
        ...

    def delete(self, kid: str) -> None:
        """Removes the key `kid` (nothing when absent)."""
        ...
