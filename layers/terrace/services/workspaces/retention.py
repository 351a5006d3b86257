"""Data retention policies of organizations and workspaces (TFE's `relationships/data-retention-policy`).

A policy is `delete-older` (backing data older than `delete-older-than-n-days` is deleted by the sweep,
`services/workflows/retention_sweep.py`) or `dont-delete`. A workspace's own policy overrides its
organization's; without either nothing is deleted. A policy lives inside its owner's item (the organization's
`settings`, the workspace's `extra`), so deleting the owner deletes it and reading the owner costs nothing more.

Two API shapes exist and both are served: TFE v202311/v202312 (go-tfe ≤ 1.41) set a policy with
`PATCH` of a `data-retention-policies` resource; TFE v202401+ `POST`s a `data-retention-policy-delete-olders`
or `data-retention-policy-dont-deletes` resource. A policy is shown in the shape it was set in, so each client
reads back what it wrote (go-tfe's legacy reader refuses the newer types).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from terrace.domain.errors import Invalid, NotFound
from terrace.domain.ids import new_id
from terrace.domain.principal import Principal
from terrace.domain.retention import (
    DAYS,
    DELETE_OLDER,
    LEGACY_TYPE,
    MAX_DAYS,
    ORG_SETTING,
    TYPES,
    WORKSPACE_FIELD,
    RetentionPolicy,
    of_organization,
    of_workspace,
)
from terrace.domain.workspace import Workspace
from terrace.services.access.authz import Action, Authorizer
from terrace.services.access.organizations import OrganizationService
from terrace.services.workspaces.workspaces import WorkspaceService


def _parse(resource_type: str, attrs: dict[str, Any], previous: RetentionPolicy | None) -> RetentionPolicy:
    kind = TYPES.get(resource_type)
    if kind is None:
        raise Invalid(f"type must be one of {', '.join(TYPES)}", pointer="/data/type")
    days: int | None = None
    if kind == DELETE_OLDER:
        days = attrs.get(DAYS)
        if not isinstance(days, int) or isinstance(days, bool) or not 1 <= days <= MAX_DAYS:
            raise Invalid(
                f"{DAYS} must be a whole number of days from 1 to {MAX_DAYS}", pointer=f"/data/attributes/{DAYS}"
            )
    # the id survives a change of days; a change of kind is a new policy, as in TFE
    same_kind = previous is not None and previous.kind == kind
    policy_id = previous.id if same_kind and previous is not None else new_id("drp")
    return RetentionPolicy(policy_id, kind, days, legacy=resource_type == LEGACY_TYPE)


class RetentionPolicyService:
    def __init__(self, authz: Authorizer, organizations: OrganizationService, workspaces: WorkspaceService) -> None:
        self._authz, self._orgs, self._workspaces = authz, organizations, workspaces

    # organizations: members read, owners change (as the organization's other settings) --------------
    def organization_policy(self, principal: Principal, org_name: str) -> RetentionPolicy:
        policy = of_organization(self._orgs.get(principal, org_name))
        if policy is None:
            raise NotFound(f"organization {org_name} has no data retention policy")
        return policy

    def set_organization_policy(
        self, principal: Principal, org_name: str, resource_type: str, attrs: dict[str, Any]
    ) -> RetentionPolicy:
        org = self._orgs.get(principal, org_name, Action.MANAGE_ORGANIZATION)
        policy = _parse(resource_type, attrs, of_organization(org))
        self._orgs.set_settings(org.name, {ORG_SETTING: policy.to_dict()})
        return policy

    def delete_organization_policy(self, principal: Principal, org_name: str) -> None:
        org = self._orgs.get(principal, org_name, Action.MANAGE_ORGANIZATION)
        if of_organization(org) is not None:
            self._orgs.set_settings(org.name, {ORG_SETTING: None})

    # workspaces: readers read, admins change (UPDATE_WORKSPACE, as the workspace's settings) ----------
    def workspace_policy(self, principal: Principal, workspace_id: str) -> RetentionPolicy:
        policy = of_workspace(self._workspaces.get(principal, workspace_id))
        if policy is None:
            raise NotFound(f"workspace {workspace_id} has no data retention policy")
        return policy

    def set_workspace_policy(
        self, principal: Principal, workspace_id: str, resource_type: str, attrs: dict[str, Any]
    ) -> RetentionPolicy:
        ws = self._workspaces.get(principal, workspace_id, Action.UPDATE_WORKSPACE)
        policy = _parse(resource_type, attrs, of_workspace(ws))
        self._workspaces.mutate(ws.id, lambda w: _with_policy(w, policy))
        return policy

    def delete_workspace_policy(self, principal: Principal, workspace_id: str) -> None:
        ws = self._workspaces.get(principal, workspace_id, Action.UPDATE_WORKSPACE)
        if of_workspace(ws) is not None:
            self._workspaces.mutate(ws.id, lambda w: _with_policy(w, None))

    def effective(self, ws: Workspace) -> RetentionPolicy | None:
        """The policy the sweep applies to `ws` (no permission check: the sweep is the operator's)."""
        own = of_workspace(ws)
        if own is not None:
            return own
        try:
            return of_organization(self._orgs.by_key(ws.organization))
        except NotFound:
            return None


def _with_policy(ws: Workspace, policy: RetentionPolicy | None) -> Workspace:
    extra = dict(ws.extra)
    if policy is None:
        extra.pop(WORKSPACE_FIELD, None)
    else:
        extra[WORKSPACE_FIELD] = policy.to_dict()
    return dataclasses.replace(ws, extra=extra)
