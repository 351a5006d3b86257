"""What the UI's policy pages show, each read in one call (nothing here writes): a policy set (its policies, where
it applies, its versions, its parameters with sensitive values hidden) and a policy (its code, the sets it is in).
Every read goes through the policy services' own permission checks (`READ_POLICIES`)."""

from __future__ import annotations

from dataclasses import dataclass

from terrace.domain.errors import NotFound
from terrace.domain.policies import Policy, PolicySet, PolicySetParameter, PolicySetVersion
from terrace.domain.principal import Principal
from terrace.services.policies.parameters import PolicySetParameterService
from terrace.services.policies.policies import PolicyService
from terrace.services.policies.policy_sets import PolicySetService
from terrace.services.policies.versions import PolicySetVersionService


@dataclass(frozen=True)
class PolicySetPage:
    policy_set: PolicySet
    policies: list[Policy]
    workspaces: list[str]  # names
    projects: list[str]
    excluded: list[str]
    versions: list[PolicySetVersion]  # current, then newest when it differs
    parameters: list[PolicySetParameter]
    can_manage: bool


@dataclass(frozen=True)
class PolicyPage:
    policy: Policy
    code: str | None  # None: no code uploaded yet
    sets: list[PolicySet]


class PolicyPages:
    def __init__(
        self,
        policies: PolicyService,
        policy_sets: PolicySetService,
        parameters: PolicySetParameterService,
        versions: PolicySetVersionService,
    ) -> None:
        self._policies, self._sets, self._parameters, self._versions = policies, policy_sets, parameters, versions

    def policy_set(self, principal: Principal, organization: str, set_id: str) -> PolicySetPage:
        ps = self._sets.get(principal, set_id)
        org = self._sets.organization_of(ps)
        if org is None or org.name != organization:
            raise NotFound(f"policy set {set_id} not found")
        names = lambda relation: sorted(m.name for m in self._sets.members(ps, relation))  # noqa: E731
        version_ids = [v for v in dict.fromkeys([ps.current_version_id, ps.newest_version_id]) if v]
        return PolicySetPage(
            ps,
            sorted(self._sets.members(ps, "policies"), key=lambda p: p.name),
            names("workspaces"),
            names("projects"),
            names("workspace_exclusions"),
            [self._versions.get(principal, v) for v in version_ids],
            self._parameters.list(principal, ps.id),
            self._sets.can_manage(principal, ps.id),
        )

    def policy(self, principal: Principal, organization: str, policy_id: str) -> PolicyPage:
        policy = self._policies.get(principal, policy_id)
        if policy.organization != organization:
            raise NotFound(f"policy {policy_id} not found")
        sets = [s for s in self._sets.list(principal, organization) if policy.id in s.policy_ids]
        try:
            code: str | None = self._policies.download(principal, policy_id).decode("utf-8", "replace")
        except NotFound:
            code = None
        return PolicyPage(policy, code, sorted(sets, key=lambda s: s.name))
