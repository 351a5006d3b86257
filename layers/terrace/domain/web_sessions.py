"""A signed-in browser's session."""

from __future__ import annotations

from dataclasses import dataclass

from terrace.domain.principal import Principal


@dataclass(frozen=True)
class WebSession:
    id: str
    principal: Principal
    csrf_token: str
    expires_at: int
