"""Speculative plan comments: when the organization turns on `speculative-plan-comments-enabled`, a pull request's
speculative plan ends with one comment of the workspace on the pull request (GitHub's
`POST /repos/{o}/{r}/issues/{n}/comments`, GitLab's merge request note) saying what the plan would add, change and
destroy, with a link to the run. The comment's id is kept per workspace and pull request, so the plans of later
pushes edit that one comment in place (`PATCH /repos/{o}/{r}/issues/comments/{id}`; GitLab's `PUT .../notes/:id`);
one deleted on the forge is written anew. Called by `statuses.py` on the same `run.status_changed` event that sets
the commit status, once the status the forge shows is final. Only counts and the run's link are written: no
resource name, no output, nothing of the plan's text."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from terrace.adapters.forge import Forge, ForgeAccess, ForgeError
from terrace.domain.runs import Run
from terrace.services.vcs.store import VcsStore

log = logging.getLogger("terrace.vcs")
SETTING = "speculative-plan-comments-enabled"
FINAL = ("success", "failure", "error")


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
        kept = self._store.comment_id(workspace_id, number)
        try:
            try:
                comment_id = self._forge.comment(access, repo, number, text, kept)
            except ForgeError as exc:
                if kept is None or exc.status != 404:
                    raise
                comment_id = self._forge.comment(access, repo, number, text, None)  # deleted on the forge
        except ForgeError as exc:
            log.warning("workspace %s: comment on pull request %s of %s not written: %s", workspace_id, number, repo,
                        exc.detail)  # fmt: skip
            return
        if comment_id != kept:
            self._store.put_comment_id(workspace_id, number, comment_id, int(self._now_s()))
