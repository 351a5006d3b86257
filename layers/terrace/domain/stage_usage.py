"""Which features an organization has that may take part in its runs' task stages (run tasks, policy sets).

A run asks each stage participant at three points whether anything of it applies (`services/runs/task_stages.py`);
for an organization that has neither a run task nor a policy set, every answer is "nothing" and each costs reads.
An organization therefore carries markers in a partition of their own, one item each, read in one query (their
keys: `services/shared_keys.py`):

- `known`: written with the organization; without it (an organization created before the markers existed) every
  participant is asked, as before;
- one per participant kind (`task-results`, `policy-evaluations`): written in the same transaction as the
  organization's first run task or policy set (every later one writes it again) and never cleared, so a marker may
  outlive what it marks (the participant is then asked and answers "nothing"), never the reverse.
"""

from __future__ import annotations

KNOWN = "known"
RUN_TASKS = "task-results"  # the participant kinds (`services/runs/stage_participants.py: StageParticipant.kind`)
POLICY_SETS = "policy-evaluations"
MARKED = frozenset({RUN_TASKS, POLICY_SETS})  # a participant of another kind is always asked


def asks(kind: str, markers: list[str]) -> bool:
    """Whether a participant of `kind` is asked in an organization that has the markers `markers` (their kinds)."""
    found = set(markers)
    return kind in found or kind not in MARKED or KNOWN not in found
