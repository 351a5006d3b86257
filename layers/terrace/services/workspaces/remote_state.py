"""Remote state consumers: the workspaces whose runs may read a workspace's current state and outputs
(`terraform_remote_state`) when it is not shared with the whole organization (`global-remote-state`).
The list lives on the workspace (`remote_state_consumers`); `services/access/authz.py` enforces it."""

from __future__ import annotations

import dataclasses

from terrace.domain.errors import Invalid, NotFound
from terrace.domain.principal import Principal
from terrace.domain.workspace import Workspace
from terrace.services.access.authz import Action
from terrace.services.workspaces.workspaces import WorkspaceService

MAX_CONSUMERS = 1000


class RemoteStateConsumers:
    def __init__(self, workspaces: WorkspaceService) -> None:
        self._workspaces = workspaces

    def consumers(self, principal: Principal, ws: Workspace) -> list[Workspace]:
        self._workspaces.authorize(principal, Action.READ_WORKSPACE, ws)
        if ws.project_remote_state:  # shared with its project: the project's other workspaces read it
            project = self._workspaces.project_of(ws)
            same = self._workspaces.in_project(ws.organization, project)
            return self._workspaces.allowed(principal, Action.READ_WORKSPACE, [w for w in same if w.id != ws.id])
        found = []
        for consumer_id in ws.remote_state_consumers:
            try:
                found.append(self._workspaces.load(consumer_id))
            except NotFound:
                continue  # deleted since: it no longer reads anything
        return self._workspaces.allowed(principal, Action.READ_WORKSPACE, found)

    def change(self, principal: Principal, ws: Workspace, ids: list[str], how: str) -> Workspace:
        """`how`: add, remove or replace. Consumers are workspaces of the same organization."""
        self._workspaces.authorize(principal, Action.UPDATE_WORKSPACE, ws)
        if how != "remove":
            for consumer_id in ids:
                consumer = self._workspaces.get(principal, consumer_id)
                if consumer.organization != ws.organization:
                    raise NotFound(f"workspace {consumer_id} not found")

        def apply(cur: Workspace) -> Workspace:
            current = list(cur.remote_state_consumers)
            if how == "add":
                result = current + [i for i in dict.fromkeys(ids) if i not in current]
            elif how == "remove":
                result = [i for i in current if i not in ids]
            else:
                result = list(dict.fromkeys(ids))
            if len(result) > MAX_CONSUMERS:
                raise Invalid(f"a workspace has at most {MAX_CONSUMERS} remote state consumers", pointer="/data")
            return dataclasses.replace(cur, remote_state_consumers=tuple(result))

        return self._workspaces.mutate(ws.id, apply)
