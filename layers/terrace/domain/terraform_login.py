"""A `terraform login` authorization request, once checked."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit


@dataclass(frozen=True)
class LoginRequest:
    """An authorization request the CLI sent, checked: what the approval page shows and signs off."""

    redirect_uri: str
    state: str
    code_challenge: str

    @property
    def port(self) -> int:
        return urlsplit(self.redirect_uri).port or 0
