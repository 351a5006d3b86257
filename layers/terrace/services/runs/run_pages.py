"""What the UI's run pages show, read in one place: the run of a workspace named in the page's path, the header's
facts (the caller's permissions, the plan's resource changes, the task stages and whether the caller may override
one that waits) and the run actions its buttons post. The UI's routes render these; the logs are the log
service's."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from terrace.domain import errors
from terrace.domain import runs as rs
from terrace.domain.comments import Comment, checked_body
from terrace.domain.plan_json import resource_changes
from terrace.domain.principal import Principal
from terrace.domain.runs import Run
from terrace.domain.task_stages import TaskStage
from terrace.domain.workspace import Workspace, WorkspaceLock
from terrace.services.runs.agent_waits import AgentWaits
from terrace.services.runs.comments import CommentService
from terrace.services.runs.plans import PlanService
from terrace.services.runs.run_queries import RunQueries
from terrace.services.runs.runs import RunService
from terrace.services.runs.stage_progress import StageProgress
from terrace.services.workspaces.workspaces import WorkspaceService


@dataclass(frozen=True)
class RunHeader:
    permissions: dict[str, bool]
    changes: list[tuple[str, str]] | None  # (action, address) of the plan's resource changes, when readable
    stages: list[TaskStage] = field(default_factory=list)
    can_override: bool = False  # a stage that awaits an override may be overridden by the caller


@dataclass(frozen=True)
class RunWait:
    """Why a run that has not ended does not move on, as the run page's "why is this run waiting?" panel says it.
    `kind`: "workspace" (pending: behind the run ahead in its workspace's queue or a lock), "executor" (its job
    waits in the organization's queue for `executor`) or "claimed" (a runner works its job)."""

    kind: str
    position: int = 0  # 1-based, in the workspace's queue (its current run first) or the organization's job queue
    queued: int = 0  # runs in the workspace's queue (kind "workspace")
    ahead: Run | None = None  # the run just ahead of it in its workspace's queue
    lock: WorkspaceLock | None = None  # the workspace's lock, unless this run holds it
    executor: str = ""  # who takes its jobs, e.g. "a runner of this organization"
    phase: str = ""  # the phase whose job waits or runs: plan or apply
    runner: str | None = None  # the runner that claimed the job (`name@token-id`)
    since: str | None = None  # when it was queued (kind "executor") or claimed (kind "claimed")
    heard_at: float | None = None  # the runner's last heartbeat (epoch seconds)


class RunPages:
    def __init__(
        self,
        workspaces: WorkspaceService,
        runs: RunService,
        plans: PlanService,
        stages: StageProgress,
        comments: CommentService,
        queries: RunQueries,
        agent_waits: AgentWaits | None = None,
    ) -> None:
        self._workspaces = workspaces
        self._runs = runs
        self._plans = plans
        self._stages = stages
        self._comments = comments
        self._queries = queries
        self._agent_waits = agent_waits
        self._actions: dict[str, Callable[[Principal, str], Run]] = {
            "apply": runs.apply,
            "discard": runs.discard,
            "cancel": runs.cancel,
            "force-cancel": runs.force_cancel,
        }

    @property
    def actions(self) -> frozenset[str]:
        return frozenset(self._actions)

    def load(self, principal: Principal, organization: str, name: str, run_id: str) -> tuple[Workspace, Run]:
        """The workspace `organization`/`name` and its run `run_id` (another workspace's run is not found)."""
        ws = self._workspaces.get_by_name(principal, organization, name)
        run = self._runs.get(principal, run_id)
        if run.workspace_id != ws.id:
            raise errors.NotFound(f"run {run_id} not found")
        return ws, run

    def header(self, principal: Principal, ws: Workspace, run: Run) -> RunHeader:
        changes = None
        if run.plan.status == rs.P_FINISHED and run.plan.json_key:
            try:
                changes = resource_changes(self._plans.redacted(principal, run.plan.id))
            except errors.NotFound:  # no JSON plan, or the caller may not read state
                changes = None
        permissions = self._workspaces.permissions(principal, ws)
        if not run.task_stage_ids:  # no read for a run without stages
            return RunHeader(permissions, changes)
        return RunHeader(permissions, changes, self._stages.of_run(run), self._stages.can_override(principal, run))

    def waiting(self, ws: Workspace, run: Run) -> RunWait | None:
        """Why `run` (of `ws`, both read by `load`) waits or who works it, or None when it neither waits in a
        queue nor runs on a runner (ended, awaiting confirmation, in a task stage)."""
        if run.status == rs.PENDING and not run.plan_only:
            queue = self._queries.workspace_queue(ws)  # one read of the workspace's runs
            ids = [r.id for r in queue]
            index = ids.index(run.id) if run.id in ids else 0
            held = ws.lock if ws.lock is not None and ws.lock.holder != f"run:{run.id}" else None
            ahead = queue[index - 1] if index > 0 else None
            return RunWait("workspace", index + 1, len(queue), ahead, held)
        phase = "apply" if run.status in (rs.CONFIRMED, rs.APPLY_QUEUED, rs.APPLYING) else "plan"
        state = run.phase(phase)
        if run.status in rs.QUEUED or run.status == rs.CONFIRMED:
            position = self._queries.queue_positions([run]).get(run.id, 0)
            since = state.queued_at or run.queued_at
            return RunWait("executor", position, executor=self.executor_of(ws, run), phase=phase, since=since)
        if run.status in rs.RUNNING:
            since = state.timestamps.get(f"{rs.P_RUNNING}-at") or state.started_at
            return RunWait("claimed", phase=phase, runner=state.runner_id, since=since, heard_at=state.heartbeat_at)
        return None

    def executor_of(self, ws: Workspace, run: Run) -> str:
        """Who takes the jobs of `ws`'s runs, as the waiting panel names them. The one place another executor
        (an agent pool of a workspace in the `agent` execution mode) names itself."""
        by_agent = self._agent_waits.executor(run) if self._agent_waits else None
        return by_agent or "a runner of this organization"

    def comments(self, principal: Principal, run: Run) -> list[Comment]:
        """The run's comments, oldest first (no read for a run without any)."""
        return self._comments.list(principal, run.id) if run.comment_ids else []

    def act(self, principal: Principal, run: Run, action: str, comment: str | None = None) -> Run:
        """Apply, discard, cancel or force-cancel `run` as its page's buttons do, with an optional comment (checked
        before the action, kept as the run's comment after it, as the API's actions do); the run as it is after."""
        if action not in self._actions:
            raise errors.NotFound(f"no run action {action}")
        if comment is not None:
            checked_body(comment, "comment")
        self._actions[action](principal, run.id)
        if comment is not None:
            self._comments.create(principal, run.id, comment)
        return self._runs.get(principal, run.id)

    def comment(self, principal: Principal, run: Run, body: str) -> Comment:
        """A comment on `run` alone (the page's comment box without an action): blank is refused."""
        if not body.strip():
            raise errors.Invalid("a comment needs some text", pointer="/data/attributes/body")
        return self._comments.create(principal, run.id, body.strip())

    def reread(self, principal: Principal, run: Run) -> Run:
        return self._runs.get(principal, run.id)
