"""The run store's logs and comments (`store.py`: `RunStore.logs`, `RunStore.comments`).

A phase's live log is chunks under `<phase>#log`, sorted by attempt, then offset (`<attempt>#<offset>`; a
server-written line at the head of an attempt is `<attempt>#-`, one at its end `<attempt>#~`). A comment is one row
(`cm-…`, sort key `comment`), listed per run through gsi1 (`<run>#comments`)."""

from __future__ import annotations

import dataclasses
from typing import Any

from terrace.adapters.table import Put, Table, WriteOp
from terrace.domain.comments import Comment
from terrace.domain.ids import looks_like

HEAD, TAIL = "-", "~"  # the positions of a server-written line: before the runner's bytes, after them


def archive_key(phase_id: str) -> str:
    """The blob a phase's log is archived to when the phase ends (framed and masked)."""
    return f"logs/{phase_id}.log"


def log_partition(phase_id: str) -> str:
    return f"{phase_id}#log"


class LogStore:
    def __init__(self, table: Table) -> None:
        self._table = table

    def put(self, phase_id: str, attempt: int, position: int | str, data: bytes) -> None:
        """One chunk of an attempt at byte `position` (or `HEAD`/`TAIL`); the same place overwrites itself."""
        where = f"{position:012d}" if isinstance(position, int) else position
        self._table.put({"pk": log_partition(phase_id), "sk": f"{attempt:03d}#{where}", "data": data})

    def chunks(self, phase_id: str) -> list[bytes]:
        """The chunks in order (one query)."""
        return [bytes(item["data"]) for item in self._table.query(log_partition(phase_id))]

    def chunks_after(self, phase_id: str, after: str) -> list[tuple[str, bytes]]:
        """The chunks whose place sorts after `after` ("": all), in order, each with its place (one query)."""
        return [
            (str(item["sk"]), bytes(item["data"])) for item in self._table.query(log_partition(phase_id), after=after)
        ]

    def purge(self, phase_id: str) -> None:
        """Delete the chunks, one by one (the archive holds them now)."""
        for item in self._table.query(log_partition(phase_id)):
            self._table.delete(item["pk"], item["sk"])


def comment_to_item(comment: Comment) -> dict[str, Any]:
    item = dataclasses.asdict(comment)
    item.update(
        pk=comment.id, sk="comment", gsi1pk=f"{comment.run_id}#comments", gsi1sk=comment.created_at + comment.id
    )
    return item


def comment_from_item(item: dict[str, Any]) -> Comment:
    names = {f.name for f in dataclasses.fields(Comment)}
    return Comment(**{k: v for k, v in item.items() if k in names})


class CommentStore:
    def __init__(self, table: Table) -> None:
        self._table = table

    def of_run(self, run_id: str) -> list[Comment]:
        """Oldest first."""
        return [comment_from_item(item) for item in self._table.query(f"{run_id}#comments", index="gsi1")]

    def find(self, comment_id: str) -> Comment | None:
        item = self._table.get(comment_id, "comment") if looks_like(comment_id, "cm") else None
        return comment_from_item(item) if item else None

    @staticmethod
    def put_ops(comment: Comment, event: dict[str, Any]) -> list[WriteOp]:
        """The writes of a new comment and its run event (`store.event_item`), for the run's transaction."""
        return [Put(comment_to_item(comment)), Put(event)]
