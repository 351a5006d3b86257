"""An organization's token TTL policies (`/organizations/:org/token-ttl-policies`, go-tfe's
`OrganizationTokenTTLPolicies`): members read them, who may manage the organization changes them. Each kind is one
organization setting, so changing one never rewrites another; what a policy caps is `domain/token_ttl_policies.py`'s
(organization tokens: `service_tokens.py`, team tokens: `team_tokens.py`)."""

from __future__ import annotations

import builtins
from typing import Any

from terrace.domain import clock
from terrace.domain import token_ttl_policies as ttl
from terrace.domain.organizations import Organization
from terrace.domain.principal import Principal
from terrace.services.access.authz import Action
from terrace.services.access.organizations import OrganizationService


class TokenTTLPolicyService:
    def __init__(self, organizations: OrganizationService) -> None:
        self._orgs = organizations

    def list(self, principal: Principal, organization: str) -> tuple[Organization, builtins.list[ttl.TokenTTLPolicy]]:
        org = self._orgs.settings(principal, organization)
        return org, ttl.policies(org.settings, org.created_at)

    def update(
        self, principal: Principal, organization: str, raw: Any
    ) -> tuple[Organization, builtins.list[ttl.TokenTTLPolicy]]:
        """The kinds `raw` names set to their maximum; every kind's policy after it."""
        org = self._orgs.get(principal, organization, Action.MANAGE_ORGANIZATION)
        wanted, now = ttl.check_update(raw), clock.now_iso()
        current = {p.token_type: p for p in ttl.policies(org.settings, org.created_at)}
        values = {
            ttl.setting_key(kind): {
                "max_ttl_ms": ms,
                "created_at": current[kind].created_at if ttl.setting_key(kind) in org.settings else now,
                "updated_at": now,
            }
            for kind, ms in wanted.items()
        }
        updated = self._orgs.set_settings(org.name, values)
        return updated, ttl.policies(updated.settings, updated.created_at)
