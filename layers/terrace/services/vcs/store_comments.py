"""The VCS store's pull request comments (`store.py`: `VcsStore.comments`; `comments.py`): one item per workspace
and pull request (`<workspace>` / `vcs-comment#<number>`), expiring COMMENT_KEPT_S after its last plan.

The item is claimed before the comment exists (`claim`: a write if absent), so of two plans of one pull request
that finish together exactly one creates the comment; its id is recorded once the forge answered (`record`). A
plan that finds the claim without an id leaves its text for the claimant (`hand_over`), who edits the comment
with it after recording the id. Every write after the claim is conditional on the item's `version`."""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any

from terrace.adapters.table import ConditionFailed, Table
from terrace.domain.ids import looks_like

COMMENT = "vcs-comment#"  # + a pull request's number
COMMENT_KEPT_S = 90 * 24 * 3600  # a pull request's comment is edited in place this long after its last plan


@dataclass(frozen=True)
class PullRequestComment:
    comment_id: str | None  # None: claimed, not yet created on the forge
    claimed_at: int  # epoch seconds of the claim
    claim: str  # who claimed it (a random token of the claiming write)
    handed_over: str | None  # the text of a plan that found the claim without an id
    version: int


class CommentStore:
    def __init__(self, table: Table) -> None:
        self._table = table

    def get(self, workspace_id: str, number: int) -> PullRequestComment | None:
        item = self._table.get(workspace_id, f"{COMMENT}{number}") if looks_like(workspace_id, "ws") else None
        if item is None:
            return None
        comment_id = item.get("comment_id")
        return PullRequestComment(None if comment_id is None else str(comment_id), int(item.get("claimed_at", 0)),
                                  str(item.get("claim", "")), item.get("handed_over"),
                                  int(item.get("version", 0)))  # fmt: skip

    def claim(
        self, workspace_id: str, number: int, now_s: int, replacing: PullRequestComment | None = None
    ) -> str | None:
        """Claim the creation of the pull request's comment: the claim's token, None when another came first.
        `replacing`: the item read (a stale claim, or a comment deleted on the forge), taken over if unchanged."""
        token = secrets.token_hex(8)
        if replacing is not None and replacing.version == 0:  # an item of before the claims: no version to test
            self._table.delete(workspace_id, f"{COMMENT}{number}")
            replacing = None
        version = (replacing.version if replacing else 0) + 1
        try:
            self._put(workspace_id, number, {"claimed_at": now_s, "claim": token}, now_s, version, replacing)
        except ConditionFailed:
            return None
        return token

    def record(self, workspace_id: str, number: int, comment_id: str, now_s: int, read: PullRequestComment) -> None:
        """The comment's id over the item as read (its text handed over is dropped: the caller applies it);
        ConditionFailed when it changed since."""
        values = {"comment_id": comment_id, "claimed_at": read.claimed_at, "claim": read.claim}
        self._put(workspace_id, number, values, now_s, read.version + 1, read)

    def hand_over(self, workspace_id: str, number: int, text: str, now_s: int, read: PullRequestComment) -> None:
        """Leave `text` for the claimant of the item as read; ConditionFailed when it changed since."""
        values = {"claimed_at": read.claimed_at, "claim": read.claim, "handed_over": text}
        self._put(workspace_id, number, values, now_s, read.version + 1, read)

    def release(self, workspace_id: str, number: int, version: int) -> None:
        """Drop a claim whose comment could not be created (unless it changed since)."""
        try:
            self._table.delete(workspace_id, f"{COMMENT}{number}", if_version=version)
        except ConditionFailed:
            pass

    def _put(self, workspace_id: str, number: int, values: dict[str, Any], now_s: int, version: int,
             read: PullRequestComment | None) -> None:  # fmt: skip
        item = {"pk": workspace_id, "sk": f"{COMMENT}{number}", **values, "version": version,
                "expires_at": now_s + COMMENT_KEPT_S}  # fmt: skip
        if read is None:
            self._table.put(item, if_absent=True)
        else:
            self._table.put(item, if_version=read.version)
