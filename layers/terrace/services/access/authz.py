"""The one place where permissions are decided.

Every service asks `Authorizer.require(...)` before it reads or changes anything. Callers with
no access to an organization at all get NotFound (its existence is not revealed), so do callers
who cannot read the workspace they ask about; callers who can see it but may not do the action get
Forbidden. A user's permissions are the owners team's (everything) or the union of their teams'
grants (`permissions.py`, read by an `AccessResolver`); a team token has its team's. The sets of actions it decides
with are in `action_rules.py`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Protocol

from terrace.domain.agent_pools import queue_key as agent_queue_key
from terrace.domain.errors import Forbidden, NotFound, Unauthenticated
from terrace.domain.organizations import OrgView
from terrace.domain.principal import Principal, PrincipalKind
from terrace.domain.projects import default_project_id
from terrace.domain.teams import Team, owners_team_id
from terrace.domain.workspace import WorkspaceView
from terrace.services.access import action_rules as rules
from terrace.services.access.action_rules import run_action, team_action
from terrace.services.access.actions import Action
from terrace.services.access.permissions import NOT_A_MEMBER, Grants
from terrace.services.audit_scope import note_organization

__all__ = ["Action", "AccessResolver", "Authorizer", "run_action", "team_action"]


class AccessResolver(Protocol):
    """Reads what a caller holds in an organization (`services/access/grants.py`)."""

    def user_grants(self, user_id: str, organization: str) -> Grants: ...

    def team_grants(self, team_id: str, organization: str) -> Grants: ...


class Authorizer:
    def __init__(
        self, access: AccessResolver | None = None, project_of_workspace: Callable[[str], str | None] | None = None
    ) -> None:
        self._access = access
        # the workspaces area's: a workspace's project id (None when it is gone), for project remote state sharing
        self._project_of_workspace = project_of_workspace

    def can(self, principal: Principal, action: Action, org: OrgView, workspace: WorkspaceView | None = None) -> bool:
        try:
            self._require(principal, action, org, workspace)
        except (Forbidden, NotFound, Unauthenticated):
            return False
        return True

    def require(
        self, principal: Principal, action: Action, org: OrgView, workspace: WorkspaceView | None = None
    ) -> None:
        """Allow the action, or raise; the request's audit event is filed in `org` (a question, `can`, is not)."""
        note_organization(org.key, workspace.id if workspace is not None else None)
        self._require(principal, action, org, workspace)

    def _require(
        self, principal: Principal, action: Action, org: OrgView, workspace: WorkspaceView | None = None
    ) -> None:
        if action is Action.RUN_JOBS or principal.kind in rules.JOB_TAKERS:
            self._require_runner(principal, action, org)
            return
        if principal.kind is PrincipalKind.AUDIT_TRAIL:  # its organization's audit trail, nothing else
            if action is Action.READ_AUDIT_TRAIL and principal.organization == org.key and not org.disabled:
                return
            raise NotFound("not found")
        if principal.kind is PrincipalKind.USER and principal.token_id and not org.user_tokens_enabled:
            raise Unauthenticated("this organization does not accept user API tokens")  # a site admin's neither
        if workspace is not None and workspace.module_id is not None:
            # a registry module's test workspace (`domain/module_tests.py`): whatever is asked of it, its
            # organization's module managers alone may; a run's own token reaches nothing of it
            if principal.kind is PrincipalKind.RUN:
                raise NotFound("workspace not found")
            action, workspace = Action.MANAGE_MODULES, None
        if principal.site_admin or (principal.site_auditor and action in rules.AUDITOR):
            return
        if org.disabled:
            raise NotFound("organization not found")
        if principal.kind is PrincipalKind.USER:
            if principal.subject_id in org.owners:
                return
            grants = self._access.user_grants(principal.subject_id, org.key) if self._access else NOT_A_MEMBER
            self._decide(grants, action, org, workspace)
            return
        if principal.organization != org.key:
            raise NotFound("organization not found")
        if principal.kind is PrincipalKind.TEAM:
            if principal.subject_id == owners_team_id(org.key):
                return
            grants = self._access.team_grants(principal.subject_id, org.key) if self._access else NOT_A_MEMBER
            self._decide(grants, action, org, workspace)
            return
        if principal.kind is PrincipalKind.ORGANIZATION:
            if action in rules.NOT_FOR_ORGANIZATION_TOKENS:
                raise Forbidden(f"organization tokens may not {action.value}")
            return
        if principal.kind is PrincipalKind.RUN_TASK:
            if action in rules.RUN_TASK_ACTIONS and workspace is not None and workspace.id == principal.workspace_id:
                return
            raise NotFound("not found")  # it sees nothing else
        self._require_run_token(principal, action, workspace)

    @staticmethod
    def require_own_run(principal: Principal, run_id: str, what: str) -> None:
        """A run task's access token reaches its own run only (`what` is the 404's subject)."""
        if principal.kind is PrincipalKind.RUN_TASK and principal.subject_id != run_id:
            raise NotFound(f"{what} not found")

    @staticmethod
    def require_own_configuration(
        principal: Principal, cv_id: str, configuration_of_run: Callable[[str], str | None]
    ) -> None:
        """A run task's access token downloads its own run's configuration version only."""
        if principal.kind is PrincipalKind.RUN_TASK and configuration_of_run(principal.subject_id) != cv_id:
            raise NotFound(f"configuration version {cv_id} not found")

    @staticmethod
    def require_task_callback(principal: Principal, token_id: str | None, what: str) -> None:
        """A task result's callback is the access token given with that result's request, and nothing else."""
        if principal.kind is not PrincipalKind.RUN_TASK or token_id is None or principal.token_id != token_id:
            raise NotFound(f"{what} not found")

    @staticmethod
    def _decide(grants: Grants, action: Action, org: OrgView, workspace: WorkspaceView | None) -> None:
        """A member's permission: organization access, then project and workspace access."""
        if not grants.member:
            raise NotFound("organization not found")
        if grants.owner or action in rules.OPEN_TO_MEMBERS:
            return
        if action in rules.ORG_LEVEL:
            if action in rules.OWNERS_ONLY:
                raise Forbidden(f"only owners may {action.value}")
            if grants.org_access & set(rules.ORG_LEVEL[action]):
                return
            if action in (Action.CREATE_WORKSPACE, Action.DEPLOY_NO_CODE_MODULES) and grants.creates_workspaces:
                return
            raise Forbidden(f"your teams may not {action.value} in this organization")
        if workspace is None:  # a workspace action asked of the whole organization
            if rules.NEEDS.get(action, {action}) <= grants.workspace_actions("", ""):
                return
            raise Forbidden(f"your teams may not {action.value} in every workspace of this organization")
        actions = grants.workspace_actions(workspace.id, workspace.project_id or default_project_id(org.key))
        if rules.NEEDS.get(action, {action}) <= actions:
            return
        if Action.READ_WORKSPACE in actions:
            raise Forbidden(f"your teams may not {action.value} in workspace {workspace.id}")
        raise NotFound(f"workspace {workspace.id} not found")

    def require_granting(
        self, principal: Principal, org: OrgView, current: Mapping[str, bool], wanted: Mapping[str, bool]
    ) -> None:
        """Changing a team's organization access (from `current` to `wanted`) needs manage-organization-access,
        and grants nothing the caller does not hold themselves. Keys sent back unchanged change nothing."""
        changed = {key for key, value in wanted.items() if bool(current.get(key, False)) != value}
        if not changed:
            return
        self.require(principal, Action.MANAGE_ORGANIZATION_ACCESS, org)
        held = self._org_access_held(principal, org)
        beyond = sorted(key for key in changed if wanted[key] and held is not None and key not in held)
        if beyond:
            raise Forbidden(f"you cannot grant organization access you do not hold: {', '.join(beyond)}")

    def _org_access_held(self, principal: Principal, org: OrgView) -> frozenset[str] | None:
        """The organization access a caller holds (None: all of it)."""
        if principal.site_admin or principal.kind is PrincipalKind.ORGANIZATION:
            return None
        if principal.kind is PrincipalKind.USER and principal.subject_id not in org.owners:
            grants = self._access.user_grants(principal.subject_id, org.key) if self._access else NOT_A_MEMBER
        elif principal.kind is PrincipalKind.TEAM and principal.subject_id != owners_team_id(org.key):
            grants = self._access.team_grants(principal.subject_id, org.key) if self._access else NOT_A_MEMBER
        else:
            return None
        return None if grants.owner else grants.org_access

    def require_team_tokens(self, principal: Principal, org: OrgView, team: Team) -> None:
        """Creating, reading and revoking a team's API tokens: manage-teams (an owner's, for the owners team), or
        being a member of the team when it allows member token management (HCP Terraform's default)."""
        try:
            self.require(principal, team_action(Action.MANAGE_TEAMS, owners=team.owners), org)
        except Forbidden:  # an active member of the organization (anyone else: NotFound)
            member = principal.kind is PrincipalKind.USER and principal.subject_id in team.users
            if not (member and team.allow_member_token_management):
                raise

    @staticmethod
    def require_site_admin(principal: Principal) -> None:
        """The admin API: a site admin's user token only; to everyone else it does not exist."""
        if principal.kind is not PrincipalKind.USER or not principal.site_admin:
            raise NotFound("not found")

    @staticmethod
    def runner_organization(principal: Principal) -> str:
        """The one organization whose jobs a runner or agent token works (asking for jobs needs one of them)."""
        if principal.kind not in rules.JOB_TAKERS or not principal.organization:
            raise Forbidden("only a runner or agent token may ask for jobs")
        return principal.organization

    @classmethod
    def job_queue(cls, principal: Principal) -> str:
        """The job queue a runner or agent token takes from: a runner its organization's, an agent its pool's."""
        organization = cls.runner_organization(principal)
        if principal.kind is PrincipalKind.AGENT:
            return agent_queue_key(organization, principal.subject_id)
        return organization

    def require_job(self, principal: Principal, org: OrgView, agent_pool_id: str | None, what: str) -> None:
        """A job is worked by a runner of its organization when its run executes on Terrace, by an agent of its
        pool when it executes on agents; anyone else (another pool's agent, a runner asking for an agent's job)
        gets the same NotFound as for a job that does not exist."""
        self.require(principal, Action.RUN_JOBS, org)
        mine = principal.subject_id if principal.kind is PrincipalKind.AGENT else None
        if agent_pool_id != mine:
            raise NotFound(f"{what} not found")

    @staticmethod
    def _require_runner(principal: Principal, action: Action, org: OrgView) -> None:
        """Only a runner or agent token works jobs, and only its own organization's; it can do nothing else."""
        if principal.kind not in rules.JOB_TAKERS:
            raise NotFound("job not found")  # jobs exist for runners only
        if principal.organization != org.key:
            raise NotFound("organization not found")
        if action is not Action.RUN_JOBS:
            raise Forbidden(f"a {principal.kind.value} token may not {action.value}")

    def _require_run_token(self, principal: Principal, action: Action, workspace: WorkspaceView | None) -> None:
        """A run token acts on its own workspace; elsewhere it may only read shared state, and install its
        organization's private modules and providers (`terraform init` in the run)."""
        if action in (
            Action.READ_ORGANIZATION,
            Action.READ_ORGANIZATION_SETTINGS,
            Action.READ_MODULES,
            Action.READ_PROVIDERS,
        ):
            return
        if workspace is None:
            raise Forbidden(f"a run token may not {action.value} here")
        if workspace.id == principal.workspace_id:
            if action in rules.RUN_OWN_WORKSPACE:
                return
            raise Forbidden(f"a run token may not {action.value} in its workspace")
        reader_project = (
            self._project_of_workspace(principal.workspace_id)
            if workspace.project_remote_state and principal.workspace_id and self._project_of_workspace
            else None
        )
        if action in rules.RUN_SHARED_STATE and workspace.shares_state_with(principal.workspace_id, reader_project):
            return
        raise NotFound(f"workspace {workspace.id} not found")
