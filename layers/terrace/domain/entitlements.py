"""What an organization may use: HCP Terraform's entitlement set (`GET /organizations/:org/entitlement-set`) and the
feature sets a site admin puts an organization on (`GET /admin/feature-sets`, `POST /admin/organizations/:org/
subscription`, the internal plan API go-tfe's tests of paid features call).

A self-hosted Terrace has no tiers: `TERRACE` says, for each entitlement HCP names, whether Terrace has the feature
at all (true where it exists, false where it does not: Sentinel, Waypoint, HashiCorp's billing). Every organization
has all of it unless a site admin put it on a feature set that withholds something; a feature set can withhold only
what Terrace checks per organization (`GATED`: global run tasks, `services/runs/run_tasks.py`), so an entitlement
never says false of a feature the organization can still use, nor true of one it cannot. The feature sets carry
HCP's plan names, so a site admin (or go-tfe's helpers) moving an organization between plans gets the same effect.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# entitlement -> whether Terrace has the feature (and where)
TERRACE: dict[str, bool] = {
    "operations": True,  # remote plans and applies (services/runs/)
    "state-storage": True,
    "teams": True,
    "vcs-integrations": True,  # GitHub-, Gitea- and GitLab-shaped forges (services/vcs/)
    "private-module-registry": True,  # services/registry/
    "sentinel": False,  # policies are OPA only (HashiCorp's Sentinel is proprietary)
    "policy-enforcement": True,  # OPA policy sets (services/policies/)
    "run-tasks": True,  # services/runs/run_tasks.py
    "global-run-tasks": True,  # a task's `global-configuration` (services/runs/task_results.py)
    "private-run-tasks": False,  # run tasks through an agent pool
    "private-policy-agents": False,
    "agents": True,  # agent pools and `terrace agent`
    "sso": True,  # OpenID Connect single sign-on (services/access/oidc.py)
    "audit-logging": True,  # services/audit/
    "cost-estimation": True,
    "usage-reporting": False,
    "self-serve-billing": False,
    "configuration-designer": False,
    "module-tests-generation": False,
    "waypoint-actions": False,
    "waypoint-templates-and-addons": False,
    "infragraph": False,
    "infragraph-with-nrtu": False,
}
GLOBAL_RUN_TASKS = "global-run-tasks"
GATED = frozenset({GLOBAL_RUN_TASKS})  # what a feature set may withhold: checked per organization
SETTING = "feature-set"  # the organization setting naming its feature set's id (absent: everything)


@dataclass(frozen=True)
class FeatureSet:
    id: str
    name: str  # HCP's plan name (go-tfe's helpers search by it)
    identifier: str
    withheld: frozenset[str] = frozenset()


EVERYTHING = FeatureSet("fs-everything", "Terrace", "everything")
FEATURE_SETS = (
    EVERYTHING,
    FeatureSet("fs-business", "Business", "business"),
    FeatureSet("fs-standard-entitlement", "Standard (entitlement)", "standard_entitlement"),
    FeatureSet("fs-free", "Free", "free", frozenset({GLOBAL_RUN_TASKS})),  # HCP's free tier has no global tasks
)
assert all(fs.withheld <= GATED for fs in FEATURE_SETS)


def search(query: str) -> list[FeatureSet]:
    """The feature sets whose name contains `query` (case-insensitive); all of them for none."""
    needle = query.strip().lower()
    return [fs for fs in FEATURE_SETS if needle in fs.name.lower()]


def by_id(feature_set_id: Any) -> FeatureSet | None:
    return next((fs for fs in FEATURE_SETS if fs.id == feature_set_id), None)


def of_organization(settings: Mapping[str, Any]) -> FeatureSet:
    return by_id(settings.get(SETTING)) or EVERYTHING


def entitlements(settings: Mapping[str, Any]) -> dict[str, bool]:
    """The organization's entitlement set: what Terrace has, less what its feature set withholds."""
    withheld = of_organization(settings).withheld
    return {name: has and name not in withheld for name, has in TERRACE.items()}


def entitled(settings: Mapping[str, Any], name: str) -> bool:
    return entitlements(settings).get(name, False)
