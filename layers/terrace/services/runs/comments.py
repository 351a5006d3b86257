"""Run comments (`/runs/:id/comments`, `/comments/:id`): each is also a `commented` run event, and the
run lists its comments. A comment is one row (`cm-…`), listed per run through gsi1 (`<run>#comments`)."""

from __future__ import annotations

import dataclasses
from typing import Any

from terrace.adapters.table import Put, Table
from terrace.domain import clock
from terrace.domain.comments import Comment, checked_body
from terrace.domain.errors import NotFound
from terrace.domain.ids import looks_like, new_id
from terrace.domain.principal import Principal
from terrace.domain.runs import Run
from terrace.services.access.authz import Action
from terrace.services.runs.runs import RunService
from terrace.services.runs.store import RunStore, event_item, retrying
from terrace.services.workspaces.workspaces import WorkspaceService


def _to_item(comment: Comment) -> dict[str, Any]:
    item = dataclasses.asdict(comment)
    item.update(
        pk=comment.id, sk="comment", gsi1pk=f"{comment.run_id}#comments", gsi1sk=comment.created_at + comment.id
    )
    return item


def _from_item(item: dict[str, Any]) -> Comment:
    names = {f.name for f in dataclasses.fields(Comment)}
    return Comment(**{k: v for k, v in item.items() if k in names})


class CommentService:
    def __init__(self, table: Table, store: RunStore, runs: RunService, workspaces: WorkspaceService) -> None:
        self._table, self._store, self._runs, self._workspaces = table, store, runs, workspaces

    def list(self, principal: Principal, run_id: str) -> list[Comment]:
        run = self._runs.get(principal, run_id)
        return [_from_item(item) for item in self._table.query(f"{run.id}#comments", index="gsi1")]

    def get(self, principal: Principal, comment_id: str) -> Comment:
        item = self._table.get(comment_id, "comment") if looks_like(comment_id, "cm") else None
        if item is None:
            raise NotFound(f"comment {comment_id} not found")
        comment = _from_item(item)
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
                [(current, expected)], None, {current.id: current.status}, [Put(_to_item(comment)), Put(event)]
            )
            return current

        retrying(step)
        return comment
