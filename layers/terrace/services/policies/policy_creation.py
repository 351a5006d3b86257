"""A policy created into policy sets at once (`relationships.policy-sets` of `POST /organizations/:org/policies`, as
HCP Terraform takes it): each set is checked (this organization's, the policy's kind, manageable by the caller)
before anything is written; a set that goes away before the policy joins it takes the new policy with it."""

from __future__ import annotations

from typing import Any

from terrace.domain import policies as rules
from terrace.domain.errors import Invalid, NotFound
from terrace.domain.policies import Policy
from terrace.domain.principal import Principal
from terrace.services.access.authz import Action
from terrace.services.access.organizations import OrganizationService
from terrace.services.policies.policies import PolicyService
from terrace.services.policies.policy_sets import PolicySetService


class PolicyCreation:
    def __init__(self, organizations: OrganizationService, policies: PolicyService, sets: PolicySetService) -> None:
        self._orgs, self._policies, self._sets = organizations, policies, sets

    def create(self, principal: Principal, organization: str, attrs: dict[str, Any], set_ids: list[str]) -> Policy:
        org = self._orgs.get(principal, organization, Action.MANAGE_POLICIES)
        sets = [self._sets.get(principal, i, Action.MANAGE_POLICIES) for i in dict.fromkeys(set_ids)]
        kind = rules.check_kind(attrs.get("kind"))
        if other := next((s for s in sets if s.kind != kind or s.organization != org.name), None):
            raise Invalid(f"policy set {other.id} is a {other.kind} set", pointer="/data/relationships/policy-sets")
        policy = self._policies.create(principal, organization, attrs)
        try:
            for s in sets:
                self._sets.change_members(principal, s.id, "policies", [policy.id], add=True)
        except (NotFound, Invalid):
            self._policies.delete(principal, policy.id)
            raise
        return policy
