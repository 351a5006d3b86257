"""Run comments (`/runs/:id/comments`, `/comments/:id`): each is also a `commented` run event, and the
run lists its comments (stored by the run store: `store_logs.py`)."""

from __future__ import annotations

from typing import Any

from terrace.domain import clock
from terrace.domain.comments import Comment, checked_body
from terrace.domain.errors import NotFound
from terrace.domain.ids import new_id
from terrace.domain.principal import Principal
from terrace.domain.runs import Run
from terrace.services.access.authz import Action
from terrace.services.runs.runs import RunService
from terrace.services.runs.store import RunStore, event_item, retrying
from terrace.services.workspaces.workspaces import WorkspaceService


class CommentService:
    def __init__(self, store: RunStore, runs: RunService, workspaces: WorkspaceService) -> None:
        self._store, self._runs, self._workspaces = store, runs, workspaces

    def list(self, principal: Principal, run_id: str) -> list[Comment]:
        run = self._runs.get(principal, run_id)
        return self._store.comments.of_run(run.id)

    def get(self, principal: Principal, comment_id: str) -> Comment:
        comment = self._store.comments.find(comment_id)
        if comment is None:
            raise NotFound(f"comment {comment_id} not found")
        try:
            self._runs.get(principal, comment.run_id)
        except NotFound as exc:
            raise NotFound(f"comment {comment_id} not found") from exc
        return comment

    def create(self, principal: Principal, run_id: str, body: Any) -> Comment:
        """Comment on a run (whoever may queue its runs), with its `commented` run event, in one write."""
        run = self._runs.get(principal, run_id)
        self._workspaces.authorize(principal, Action.QUEUE_RUN, self._workspaces.load(run.workspace_id))
        text = checked_body(body)
        comment_id, now = new_id("cm"), clock.now_iso()
        event = event_item(run.id, now, "commented", "commented", actor=principal.username, comment_id=comment_id)
        comment = Comment(comment_id, run.id, text, principal.username, now, event["id"])

        def step() -> Run:
            current = self._store.load(run.id)
            expected = current.version
            current.comment_ids.append(comment.id)
            self._store.save(
                [(current, expected)], None, {current.id: current.status}, self._store.comments.put_ops(comment, event)
            )
            return current

        retrying(step)
        return comment
