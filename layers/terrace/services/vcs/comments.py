"""Speculative plan comments: when the organization turns on `speculative-plan-comments-enabled`, a pull request's
speculative plan ends with one comment of the workspace on the pull request (GitHub's
`POST /repos/{o}/{r}/issues/{n}/comments`, GitLab's merge request note) saying what the plan would add, change and
destroy, with a link to the run. The comment's id is kept per workspace and pull request, so the plans of later
pushes edit that one comment in place (`PATCH /repos/{o}/{r}/issues/comments/{id}`; GitLab's `PUT .../notes/:id`);
one deleted on the forge is written anew. Called by `statuses.py` on the same `run.status_changed` event that sets
the commit status, once the status the forge shows is final. Only counts and the run's link are written: no
resource name, no output, nothing of the plan's text.

Two plans of one pull request may finish together: the comment is created only by the plan whose conditional
claim of it won (`store_comments.py`); the other edits it, or, when the claimant has not yet recorded the id,
leaves its text for the claimant to write. A claim whose claimant died (older than CLAIM_STALE_S) is taken over."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from terrace.adapters.forge import Forge, ForgeAccess, ForgeError
from terrace.adapters.table import ConditionFailed
from terrace.domain.runs import Run
from terrace.services.vcs.store import VcsStore

log = logging.getLogger("terrace.vcs")
SETTING = "speculative-plan-comments-enabled"
FINAL = ("success", "failure", "error")
CLAIM_STALE_S = 300  # a claim without a comment this old was left by a claimant that died
ATTEMPTS = 8  # reads of the pull request's comment item by one write (each lost race reads it again)


def body(context: str, run: Run, shown: tuple[str, str], sha: str, run_url: str) -> str:
    """The comment's Markdown."""
    plan = run.plan
    if shown[0] == "success":
        counts = f"**{plan.additions} to add, {plan.changes} to change, {plan.destructions} to destroy.**"
        summary = counts if plan.has_changes else "**No changes.** The infrastructure matches the configuration."
    else:
        summary = f"**{shown[1]}**: the plan did not finish."
    return (f"#### {context}: speculative plan\n\n{summary}\n\nCommit `{sha[:12]}` · "
            f"[View the run]({run_url})\n\n<!-- {context} -->\n")  # fmt: skip


class PlanComments:
    def __init__(self, store: VcsStore, forge: Forge, now_s: Callable[[], float] = time.time) -> None:
        self._store, self._forge, self._now_s = store, forge, now_s

    def wanted(self, settings: dict[str, Any], ingress: dict[str, Any], shown_state: str) -> bool:
        return (
            settings.get(SETTING) is True
            and ingress.get("is-pull-request") is True
            and isinstance(ingress.get("pull-request-number"), int)
            and shown_state in FINAL
        )

    def write(self, access: ForgeAccess, workspace_id: str, repo: str, number: int, text: str) -> None:
        """The workspace's comment on the pull request, created or edited; a forge that fails is logged."""
        try:
            self._write(access, workspace_id, repo, number, text)
        except ForgeError as exc:
            log.warning("workspace %s: comment on pull request %s of %s not written: %s", workspace_id, number, repo,
                        exc.detail)  # fmt: skip

    def _write(self, access: ForgeAccess, workspace_id: str, repo: str, number: int, text: str) -> None:
        comments = self._store.comments
        for _ in range(ATTEMPTS):
            now = int(self._now_s())
            read = comments.get(workspace_id, number)
            if read is not None and read.comment_id is not None:
                try:
                    self._forge.comment(access, repo, number, text, read.comment_id)
                    return
                except ForgeError as exc:
                    if exc.status != 404:
                        raise
                # deleted on the forge: written anew by whoever claims it again
            elif read is not None and now - read.claimed_at < CLAIM_STALE_S:
                try:
                    comments.hand_over(workspace_id, number, text, now, read)  # the claimant writes it
                    return
                except ConditionFailed:
                    continue
            claim = comments.claim(workspace_id, number, now, read)
            if claim is not None:
                return self._create(access, workspace_id, repo, number, text, claim)
        log.warning("workspace %s: comment on pull request %s of %s not written: it kept changing", workspace_id,
                    number, repo)  # fmt: skip

    def _create(self, access: ForgeAccess, workspace_id: str, repo: str, number: int, text: str, claim: str) -> None:
        """Create the comment this write claimed, record its id, then write a text handed over meanwhile."""
        comments = self._store.comments
        try:
            comment_id = self._forge.comment(access, repo, number, text, None)
        except ForgeError:
            read = comments.get(workspace_id, number)
            if read is not None and read.claim == claim and read.comment_id is None:
                comments.release(workspace_id, number, read.version)  # the next plan claims it again
            raise
        for _ in range(ATTEMPTS):
            read = comments.get(workspace_id, number)
            if read is None or read.claim != claim or read.comment_id is not None:
                return  # taken over meanwhile (the claim had gone stale): the newer claimant writes
            try:
                comments.record(workspace_id, number, comment_id, int(self._now_s()), read)
            except ConditionFailed:
                continue  # a text handed over meanwhile: read again
            if read.handed_over is not None and read.handed_over != text:
                self._forge.comment(access, repo, number, read.handed_over, comment_id)
            return
