"""Everything a caller may be allowed to do (decided in `authz.py`)."""

from __future__ import annotations

from enum import StrEnum


class Action(StrEnum):
    READ_ORGANIZATION = "read-organization"  # what is in it: its tags, run tasks, agent pools, explorer, ...
    # the organization's own record and settings (name, e-mail, its settings, entitlements, token TTL policies):
    # what a site auditor reads of every organization, besides its audit trail
    READ_ORGANIZATION_SETTINGS = "read-organization-settings"
    MANAGE_ORGANIZATION = "manage-organization"
    READ_AUDIT_TRAIL = "read-audit-trail"
    DELETE_ORGANIZATION = "delete-organization"
    CREATE_WORKSPACE = "create-workspace"
    # provision a workspace from a no-code module (`services/workflows/no_code_provisioning.py`): who may create
    # workspaces, never an organization token (HCP Terraform's `can-deploy-no-code-modules`)
    DEPLOY_NO_CODE_MODULES = "deploy-no-code-modules"
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
    MANAGE_NOTIFICATIONS = "manage-notifications"  # a workspace's notification configurations (its admins)
    RUN_JOBS = "run-jobs"  # take, heartbeat, log and finish jobs (the runner protocol)
    # teams and access (organization level unless noted)
    READ_TEAMS = "read-teams"
    MANAGE_TEAMS = "manage-teams"
    MANAGE_MEMBERSHIP = "manage-membership"
    MANAGE_ORGANIZATION_ACCESS = "manage-organization-access"  # change what a team may do in the organization
    MANAGE_OWNERS_TEAM = "manage-owners-team"  # anything done to the owners team: its members, tokens, settings
    READ_PROJECTS = "read-projects"
    MANAGE_PROJECTS = "manage-projects"
    MANAGE_WORKSPACE_ACCESS = "manage-workspace-access"  # a workspace's team access (workspace admins too)
    READ_VARSETS = "read-varsets"  # an organization's variable sets (with their non-sensitive values)
    MANAGE_VARSETS = "manage-varsets"  # create, change, delete and apply variable sets
    MANAGE_RUN_TRIGGERS = "manage-run-triggers"  # a workspace's source workspaces (its admins)
    MANAGE_RUN_TASKS = "manage-run-tasks"  # the organization's run tasks and their workspace attachments
    MANAGE_POLICY_OVERRIDES = "manage-policy-overrides"  # override a task stage that awaits an override
    MANAGE_WORKSPACE_RUN_TASKS = "manage-workspace-run-tasks"  # attach run tasks to a workspace
    READ_PLAN_JSON = "read-plan-json"  # a plan's JSON (json-output): read runs and read state
    DOWNLOAD_CONFIGURATION = "download-configuration"  # a configuration version's archive: queue runs
    # HCP's "Download Sentinel mocks": a plan's data exported as a mock bundle (the plan-exports API: create, read,
    # download, delete); write and admin access, or custom access with `sentinel-mocks: read`
    DOWNLOAD_SENTINEL_MOCKS = "download-sentinel-mocks"
    # policy as code (organization level)
    READ_POLICIES = "read-policies"  # policies, policy sets and their versions (parameter values stay hidden)
    MANAGE_POLICIES = "manage-policies"
    # agent pools, their tokens and agents (organization level)
    READ_AGENT_POOLS = "read-agent-pools"  # pools and their agents: every member (a workspace's setting picks one)
    MANAGE_AGENT_POOLS = "manage-agent-pools"  # create, change, delete pools; issue and revoke their tokens
    # the private module registry (organization level)
    READ_MODULES = "read-modules"  # modules, their versions and downloads: every member
    MANAGE_MODULES = "manage-modules"  # create modules, publish and delete versions
    # the private provider registry (organization level; GPG keys are the organization's namespace's)
    READ_PROVIDERS = "read-providers"  # providers, versions, platforms, GPG keys and downloads: every member
    MANAGE_PROVIDERS = "manage-providers"  # create providers, publish versions and platforms, manage GPG keys
    # VCS providers (organization level): OAuth clients and tokens
    READ_VCS = "read-vcs"  # clients and tokens without their credentials: every member (connecting picks a token)
    MANAGE_VCS = "manage-vcs"  # create, change, delete clients and tokens
