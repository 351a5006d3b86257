"""The rules `authz.py` decides with, as data: what each kind of caller reaches (a run token, a run task's token, a
runner or agent, a site auditor, an organization token), which organization access grants each organization-level
action to a member who is not an owner, what is open to every member or to owners only, and what a run or an
action on a team amounts to."""

from __future__ import annotations

from terrace.domain.principal import PrincipalKind
from terrace.services.access.actions import Action

# What a run token may do in the workspace its run belongs to.
RUN_OWN_WORKSPACE = frozenset(
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
RUN_SHARED_STATE = frozenset({Action.READ_WORKSPACE, Action.READ_STATE, Action.READ_STATE_OUTPUTS})


def run_action(*, plan_only: bool, save_plan: bool, auto_apply: bool) -> Action:
    """The permission a run amounts to, decided when it is created. A run that applies with no later
    confirmation (auto-apply, whatever else it asks: destroy, refresh-only, target or replace addresses, an
    empty apply, run variables) is an apply; every other run only plans: a speculative one, a saved plan
    (applying it later is a confirmation, checked then) or one that waits for someone who may apply."""
    if auto_apply and not plan_only and not save_plan:
        return Action.APPLY_RUN
    return Action.QUEUE_RUN


def team_action(action: Action, *, owners: bool) -> Action:
    """What is done to a team needs `action`, unless the team is the owners team: reading it is open as any
    team's, everything else (members, tokens, settings, sso-team-id) is an owner's."""
    return Action.MANAGE_OWNERS_TEAM if owners and action is not Action.READ_TEAMS else action


# Organization-level actions and the organization access that grants each to a non-owner member.
ORG_LEVEL: dict[Action, tuple[str, ...]] = {
    Action.READ_ORGANIZATION: (),
    Action.READ_ORGANIZATION_SETTINGS: (),
    Action.READ_TEAMS: (),
    Action.READ_PROJECTS: (),
    Action.MANAGE_TEAMS: ("manage-teams",),
    Action.MANAGE_MEMBERSHIP: ("manage-membership", "manage-teams"),
    Action.MANAGE_PROJECTS: ("manage-projects",),
    Action.MANAGE_ORGANIZATION_ACCESS: ("manage-organization-access",),
    Action.MANAGE_RUN_TASKS: ("manage-run-tasks",),
    Action.MANAGE_POLICY_OVERRIDES: ("manage-policy-overrides",),
    Action.MANAGE_OWNERS_TEAM: (),
    Action.CREATE_WORKSPACE: ("manage-workspaces",),
    Action.DEPLOY_NO_CODE_MODULES: ("manage-workspaces",),
    # HCP Terraform: "Manage all workspaces" (and "Manage all projects", which includes it) lets a team manage
    # variable sets; "Read all workspaces" lets it read them. A workspace's readers see the sets that reach it
    # through the workspace (READ_VARIABLES there), never the organization's other sets.
    Action.READ_VARSETS: ("manage-workspaces", "manage-projects", "read-workspaces"),
    Action.MANAGE_VARSETS: ("manage-workspaces", "manage-projects"),
    Action.MANAGE_ORGANIZATION: (),
    Action.READ_AUDIT_TRAIL: (),
    Action.DELETE_ORGANIZATION: (),
    Action.READ_POLICIES: (),
    Action.MANAGE_POLICIES: ("manage-policies",),
    Action.READ_AGENT_POOLS: (),
    Action.MANAGE_AGENT_POOLS: ("manage-agent-pools",),
    Action.READ_MODULES: (),
    Action.MANAGE_MODULES: ("manage-modules",),
    Action.READ_PROVIDERS: (),
    Action.MANAGE_PROVIDERS: ("manage-providers",),
    Action.READ_VCS: (),
    Action.MANAGE_VCS: ("manage-vcs-settings",),
}
OWNERS_ONLY = frozenset(
    {Action.MANAGE_ORGANIZATION, Action.DELETE_ORGANIZATION, Action.MANAGE_OWNERS_TEAM, Action.READ_AUDIT_TRAIL}
)
# What a site auditor (a user flag) may do in every organization: read its settings and its audit trail, nothing
# in it (not READ_ORGANIZATION: its workspaces, tags, run tasks, agents, keys, explorer).
AUDITOR = frozenset({Action.READ_ORGANIZATION_SETTINGS, Action.READ_AUDIT_TRAIL})
# What an organization token may not do: it acts for the organization, it is not one of its owners.
NOT_FOR_ORGANIZATION_TOKENS = frozenset(
    {Action.DELETE_ORGANIZATION, Action.MANAGE_OWNERS_TEAM, Action.DEPLOY_NO_CODE_MODULES}  # HCP's no-code API: not
)
OPEN_TO_MEMBERS = frozenset(
    {
        Action.READ_ORGANIZATION,
        Action.READ_ORGANIZATION_SETTINGS,
        Action.READ_TEAMS,
        Action.READ_PROJECTS,
        Action.READ_POLICIES,
        Action.READ_AGENT_POOLS,
        Action.READ_MODULES,
        Action.READ_PROVIDERS,
        Action.READ_VCS,
    }
)
# Workspace actions that amount to others for members: reading a plan's JSON reads runs and state (it shows state
# values), downloading a configuration is what queueing a run needs.
NEEDS = {
    Action.READ_PLAN_JSON: frozenset({Action.READ_RUNS, Action.READ_STATE}),
    Action.DOWNLOAD_CONFIGURATION: frozenset({Action.QUEUE_RUN}),
}
# Who works jobs: Terrace's runners (their organization's queue) and agents (their pool's queue).
JOB_TAKERS = frozenset({PrincipalKind.RUNNER, PrincipalKind.AGENT})
# What a run task's access token may do, in its run's workspace only (and only for its run: `require_own_run`).
RUN_TASK_ACTIONS = frozenset({Action.READ_PLAN_JSON, Action.DOWNLOAD_CONFIGURATION})
