"""Who is calling: resolved from a bearer token once per request, then passed to every service call."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class PrincipalKind(StrEnum):
    USER = "user"
    ORGANIZATION = "organization"  # an organization token: acts for the whole organization
    TEAM = "team"  # a team token: acts with its team's access in the team's organization
    RUN = "run"  # a short-lived token scoped to one run of one workspace
    RUNNER = "runner"  # a runner process's token: takes and works jobs of one organization, nothing else
    AGENT = "agent"  # an agent pool's token (`terrace agent`): takes and works the jobs of its one pool
    RUN_TASK = "run-task"  # a run task's access token: its run's plan JSON and configuration version, its callback
    SCIM = "scim"  # an identity provider's SCIM token (admin/scim-tokens): /scim/v2 only, refused everywhere else
    AUDIT_TRAIL = "audit-trails"  # an organization's audit trail token: its organization's audit trail only


@dataclass(frozen=True)
class Principal:
    kind: PrincipalKind
    subject_id: str  # user id, organization name, team id, run id (run and run task tokens) or agent pool id
    username: str
    token_id: str | None = None
    site_admin: bool = False
    site_auditor: bool = False  # a user who may read every organization's settings and audit trail, nothing else
    organization: str | None = None  # set for organization, team, run, runner and agent tokens
    workspace_id: str | None = None  # set for run tokens

    @property
    def lock_holder(self) -> str:
        """Who a workspace lock taken by this principal belongs to."""
        return f"{self.kind.value}:{self.subject_id}"
