"""Run triggers (`/workspaces/:id/run-triggers`, `/run-triggers/:id`): a workspace's source workspaces, at most
`MAX_SOURCES` of its own organization, never itself, each once.

Creating one needs admin on the target workspace (`MANAGE_RUN_TRIGGERS`) and permission to read runs of the
source, as HCP Terraform asks; a trigger is visible to whoever can read both its workspaces (a hidden one is
absent). One transaction writes the trigger, the source's link (conditional on its absence: no duplicate) and the
target's count of sources (conditional on its version: the limit holds under concurrent creations). The runs a
trigger queues are a use case of their own (`services/workflows/run_trigger_fanout.py`)."""

from __future__ import annotations

import builtins

from terrace.domain import clock
from terrace.domain import run_triggers as model
from terrace.domain.errors import BadRequest, Invalid, NotFound
from terrace.domain.ids import looks_like, new_id
from terrace.domain.principal import Principal
from terrace.domain.run_triggers import RunTrigger, RunTriggerView, SourcesPanel
from terrace.domain.workspace import Workspace
from terrace.services.access.authz import Action
from terrace.services.optimistic import optimistic
from terrace.services.workspaces.store_run_triggers import RunTriggerStore
from terrace.services.workspaces.workspaces import WorkspaceService

TYPE_REQUIRED = "Filter parameter run-trigger type is required and must be either 'inbound' or 'outbound'"
SOURCEABLE = "/data/relationships/sourceable"


class RunTriggerService:
    def __init__(self, store: RunTriggerStore, workspaces: WorkspaceService) -> None:
        self._store, self._workspaces = store, workspaces

    # reads -------------------------------------------------------------------------------
    def list(self, principal: Principal, workspace_id: str, kind: str | None) -> builtins.list[RunTriggerView]:
        """A workspace's inbound triggers (its sources) or outbound ones (the workspaces it triggers), oldest
        first; the other side of each must be readable too."""
        if kind not in (model.INBOUND, model.OUTBOUND):
            raise BadRequest(TYPE_REQUIRED)
        ws = self._workspaces.get(principal, workspace_id)
        inbound = kind == model.INBOUND
        triggers = self.inbound(ws.id) if inbound else self.outbound(ws.id)
        other = (lambda t: t.sourceable_id) if inbound else (lambda t: t.workspace_id)
        loaded = self._load_many([other(t) for t in triggers])
        readable = {w.id: w for w in self._workspaces.allowed(principal, Action.READ_WORKSPACE, loaded)}
        return [
            RunTriggerView(t, ws, readable[t.sourceable_id])
            if inbound
            else RunTriggerView(t, readable[t.workspace_id], ws)
            for t in triggers
            if other(t) in readable
        ]

    def get(self, principal: Principal, trigger_id: str) -> RunTriggerView:
        trigger = self._store.find(trigger_id)
        missing = NotFound(f"run trigger {trigger_id} not found")
        if trigger is None:
            raise missing
        try:
            target = self._workspaces.get(principal, trigger.workspace_id)
            source = self._workspaces.get(principal, trigger.sourceable_id)
        except NotFound as exc:
            raise missing from exc
        return RunTriggerView(trigger, target, source)

    def inbound(self, workspace_id: str) -> builtins.list[RunTrigger]:
        """A workspace's triggers (no permission check: the fan-out and deletion)."""
        return self._store.inbound(workspace_id)

    def outbound(self, source_id: str) -> builtins.list[RunTrigger]:
        """The triggers naming `source_id` as their source, oldest first (no permission check)."""
        return self._store.outbound(source_id)

    def panel(self, principal: Principal, ws: Workspace) -> SourcesPanel:
        """The settings page's run triggers: `ws`'s sources and, for its admins, the workspaces they could add
        (of its organization, whose runs they read, not `ws` and not already a source)."""
        sources = self.list(principal, ws.id, model.INBOUND)
        if not self._workspaces.can(principal, Action.MANAGE_RUN_TRIGGERS, ws):
            return SourcesPanel(sources, [], False)
        taken = {t.sourceable_id for t in self.inbound(ws.id)} | {ws.id}
        found = [w for w in self._workspaces.all_in(ws.organization) if w.id not in taken]
        return SourcesPanel(sources, self._workspaces.allowed(principal, Action.READ_RUNS, found), True)

    # writes ------------------------------------------------------------------------------
    def create(self, principal: Principal, workspace_id: str, sourceable_id: str | None) -> RunTriggerView:
        target = self._workspaces.get(principal, workspace_id, Action.MANAGE_RUN_TRIGGERS)
        if not sourceable_id:
            raise Invalid("sourceable is required: a workspace of the same organization", pointer=SOURCEABLE)
        source = self._source(principal, target, sourceable_id)

        def step() -> RunTrigger:
            if self._store.linked(source.id, target.id):
                raise Invalid(f"workspace {source.name} is already a source of {target.name}", pointer=SOURCEABLE)
            sources = self._store.sources(target.id)
            if sources.count >= model.MAX_SOURCES:
                raise Invalid(
                    f"workspace {target.name} already has {model.MAX_SOURCES} source workspaces, the most it may have",
                    pointer=SOURCEABLE,
                )
            trigger = RunTrigger(new_id("rt"), target.organization, target.id, source.id, clock.now_iso())
            self._store.add(trigger, sources)
            return trigger

        trigger = optimistic(step, exhausted="the workspace's run triggers changed concurrently; retry")
        return RunTriggerView(trigger, target, source)

    def delete(self, principal: Principal, trigger_id: str) -> None:
        view = self.get(principal, trigger_id)
        self._workspaces.authorize(principal, Action.MANAGE_RUN_TRIGGERS, view.workspace)
        self._store.remove(view.trigger)

    # helpers -----------------------------------------------------------------------------
    def _source(self, principal: Principal, target: Workspace, sourceable_id: str) -> Workspace:
        missing = NotFound(f"workspace {sourceable_id} not found")
        if not looks_like(sourceable_id, "ws"):
            raise missing
        try:
            source = self._workspaces.load(sourceable_id)
            self._workspaces.authorize(principal, Action.READ_WORKSPACE, source)
        except NotFound as exc:
            raise missing from exc
        if source.organization != target.organization:
            raise Invalid("a source workspace must belong to the same organization", pointer=SOURCEABLE)
        if source.id == target.id:
            raise Invalid("a workspace cannot be its own source", pointer=SOURCEABLE)
        self._workspaces.authorize(principal, Action.READ_RUNS, source)
        return source

    def _load_many(self, ids: builtins.list[str]) -> builtins.list[Workspace]:
        loaded = []
        for workspace_id in dict.fromkeys(ids):
            try:
                loaded.append(self._workspaces.load(workspace_id))
            except NotFound:
                continue
        return loaded
