"""The one place where permissions are decided.

Every service asks `Authorizer.require(...)` before it reads or changes anything. Callers with
no access to an organization at all get NotFound (its existence is not revealed); callers who can
see it but may not do the action get Forbidden.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from terrace.domain.errors import Forbidden, NotFound
from terrace.domain.principal import Principal, PrincipalKind


class Action(StrEnum):
    READ_ORGANIZATION = "read-organization"
    MANAGE_ORGANIZATION = "manage-organization"
    DELETE_ORGANIZATION = "delete-organization"
    CREATE_WORKSPACE = "create-workspace"
    READ_WORKSPACE = "read-workspace"
    READ_RUNS = "read-runs"  # runs, plans, applies, their logs, configuration versions
    UPDATE_WORKSPACE = "update-workspace"
    DELETE_WORKSPACE = "delete-workspace"
    LOCK_WORKSPACE = "lock-workspace"
    FORCE_UNLOCK = "force-unlock"
    READ_STATE = "read-state"
    READ_STATE_OUTPUTS = "read-state-outputs"
    WRITE_STATE = "write-state"
    QUEUE_RUN = "queue-run"
    APPLY_RUN = "apply-run"
    CANCEL_RUN = "cancel-run"
    READ_VARIABLES = "read-variables"
    WRITE_VARIABLES = "write-variables"
    RUN_JOBS = "run-jobs"  # take, heartbeat, log and finish jobs (the runner protocol)
    ADMINISTER_SITE = "administer-site"  # the /api/v2/admin API: every organization, user and tool version


# What a run token may do in the workspace its run belongs to.
_RUN_OWN_WORKSPACE = frozenset(
    {
        Action.READ_WORKSPACE,
        Action.LOCK_WORKSPACE,
        Action.READ_STATE,
        Action.READ_STATE_OUTPUTS,
        Action.WRITE_STATE,
        Action.READ_VARIABLES,
    }
)


# What a run token may do in another workspace that shares its state with it (terraform_remote_state): one
# with `global-remote-state`, or one that lists the run's workspace among its remote state consumers.
_RUN_SHARED_STATE = frozenset({Action.READ_WORKSPACE, Action.READ_STATE, Action.READ_STATE_OUTPUTS})


@dataclass(frozen=True)
class OrgView:
    """The facts about an organization that permissions depend on. `key` is its storage key: the name it was
    created with, which tokens and workspaces are bound to and which a rename does not change."""

    key: str
    owners: tuple[str, ...]
    disabled: bool = False  # a site admin disabled it: only site admins reach it


@dataclass(frozen=True)
class WorkspaceView:
    id: str
    global_remote_state: bool
    remote_state_consumers: frozenset[str] = frozenset()

    def shares_state_with(self, workspace_id: str | None) -> bool:
        return self.global_remote_state or (workspace_id is not None and workspace_id in self.remote_state_consumers)


class Authorizer:
    def can(self, principal: Principal, action: Action, org: OrgView, workspace: WorkspaceView | None = None) -> bool:
        try:
            self.require(principal, action, org, workspace)
        except (Forbidden, NotFound):
            return False
        return True

    def require(
        self, principal: Principal, action: Action, org: OrgView, workspace: WorkspaceView | None = None
    ) -> None:
        if action is Action.RUN_JOBS or principal.kind is PrincipalKind.RUNNER:
            self._require_runner(principal, action, org)
            return
        if principal.site_admin:
            return
        if org.disabled:
            raise NotFound("organization not found")
        if principal.kind is PrincipalKind.USER:
            if principal.subject_id in org.owners:
                return
            raise NotFound("organization not found")
        if principal.organization != org.key:
            raise NotFound("organization not found")
        if principal.kind is PrincipalKind.ORGANIZATION:
            if action is Action.DELETE_ORGANIZATION:
                raise Forbidden("organization tokens cannot delete their organization")
            return
        self._require_run_token(principal, action, workspace)

    @staticmethod
    def require_site_admin(principal: Principal) -> None:
        """The admin API: a site admin's user token only; to everyone else it does not exist."""
        if principal.kind is not PrincipalKind.USER or not principal.site_admin:
            raise NotFound("not found")

    @staticmethod
    def runner_organization(principal: Principal) -> str:
        """The one organization whose jobs a runner token works (asking for jobs needs a runner token)."""
        if principal.kind is not PrincipalKind.RUNNER or not principal.organization:
            raise Forbidden("only a runner token may ask for jobs")
        return principal.organization

    @staticmethod
    def _require_runner(principal: Principal, action: Action, org: OrgView) -> None:
        """Only a runner token works jobs, and only its own organization's; it can do nothing else."""
        if principal.kind is not PrincipalKind.RUNNER:
            raise NotFound("job not found")  # jobs exist for runners only
        if principal.organization != org.key:
            raise NotFound("organization not found")
        if action is not Action.RUN_JOBS:
            raise Forbidden(f"a runner token may not {action.value}")

    @staticmethod
    def _require_run_token(principal: Principal, action: Action, workspace: WorkspaceView | None) -> None:
        """A run token acts on its own workspace; elsewhere it may only read shared state."""
        if action is Action.READ_ORGANIZATION:
            return
        if workspace is None:
            raise Forbidden(f"a run token may not {action.value} here")
        if workspace.id == principal.workspace_id:
            if action in _RUN_OWN_WORKSPACE:
                return
            raise Forbidden(f"a run token may not {action.value} in its workspace")
        if action in _RUN_SHARED_STATE and workspace.shares_state_with(principal.workspace_id):
            return
        raise NotFound(f"workspace {workspace.id} not found")
