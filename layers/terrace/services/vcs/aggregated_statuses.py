"""Aggregated commit statuses: HCP's organization setting `aggregated-commit-status-enabled`. While it is on, a
commit gets one status for the organization, `Terrace/<organization>`, instead of one per workspace: each
workspace's latest run on the commit records what it shows (`VcsStore.put_commit_state`, kept 30 days), and the
commit's status is the worst of them (failure, then error, then running, then pending, else success), its
description counting them ("Terrace: 3 workspaces: 1 failed, 2 succeeded"), its link the organization's
workspaces. Off (the default), each workspace reports on its own (`statuses.py`)."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable

from terrace.adapters.forge import CommitStatus
from terrace.services.vcs.store import VcsStore

SETTING = "aggregated-commit-status-enabled"
ORDER = ("failure", "error", "running", "pending", "success")  # the worst first
WORDS = {"failure": "failed", "error": "canceled", "running": "running", "pending": "pending", "success": "succeeded"}
MAX_WORKSPACES = 1000  # workspaces counted in one commit's status (one query of the index)


def aggregate(states: dict[str, str]) -> tuple[str, str]:
    """(the state the commit shows, its description) for each workspace's state on it."""
    known = [state if state in ORDER else "running" for state in states.values()]
    counts = Counter(known)
    worst = min(known, key=ORDER.index)
    parts = ", ".join(f"{counts[state]} {WORDS[state]}" for state in ORDER if counts[state])
    return worst, f"Terrace: {len(known)} workspace{'' if len(known) == 1 else 's'}: {parts}"


class AggregatedStatuses:
    def __init__(self, store: VcsStore, public_url: str, now_s: Callable[[], float] = time.time) -> None:
        self._store, self._public_url, self._now_s = store, public_url.rstrip("/"), now_s

    def status(
        self, org_key: str, org_name: str, workspace_id: str, sha: str, state: str, pull_request: int | None
    ) -> CommitStatus:
        """Records the workspace's state on the commit; the organization's status of the commit as it is now."""
        self._store.put_commit_state(org_key, sha, workspace_id, state, int(self._now_s()))
        states = {**self._store.commit_states(org_key, sha, MAX_WORKSPACES), workspace_id: state}
        shown, description = aggregate(states)
        return CommitStatus(
            state=shown,
            context=f"Terrace/{org_name}",
            description=description,
            target_url=f"{self._public_url}/app/{org_name}/workspaces",
            pull_request=pull_request,
        )
