"""Item layouts that the stores of several areas write, kept below every area (it imports none) so that no area
imports another's store for them and `domain/` holds no storage key:

- an organization's stage-usage markers (`domain/stage_usage.py` says what they mean): written with the
  organization (access), with its first run task (runs) or policy set (policies), read by the runs' task stages;
- the assessment schedule's entries (`domain/assessments.py` says what they mean): a workspace's, written with the
  workspace (workspaces) and by the runs' assessments, and an organization's that enforces assessments (access).
"""

from __future__ import annotations

from typing import Any

from terrace.domain.stage_usage import KNOWN, POLICY_SETS, RUN_TASKS

SCHEDULE_PK = "assessments#schedule"


def stage_usage_partition(organization: str) -> str:
    return f"org#{organization}#stage-usage"


def stage_usage_marker(organization: str, kind: str) -> dict[str, Any]:
    """The item that says `organization` has used `kind` (or, for `KNOWN`, that its markers are kept)."""
    return {"pk": stage_usage_partition(organization), "sk": kind}


def stage_usage_keys(organization: str) -> list[tuple[str, str]]:
    """Every marker an organization may have (deleted with it)."""
    return [(stage_usage_partition(organization), kind) for kind in (KNOWN, RUN_TASKS, POLICY_SETS)]


def schedule_key(workspace_id: str) -> tuple[str, str]:
    return SCHEDULE_PK, workspace_id


def organization_schedule_key(organization: str) -> tuple[str, str]:
    """The schedule's entry of an organization that enforces assessments on all its workspaces
    (`assessments-enforced`): the sweep gives each of its workspaces an entry of its own."""
    return SCHEDULE_PK, f"org#{organization}"


def schedule_item(
    workspace_id: str, organization: str, enabled_at: float, due_at: float | None = None
) -> dict[str, Any]:
    """The index entry of a workspace with assessments on since `enabled_at`; `due_at` None: first due at the
    first slot of its grid after `enabled_at`."""
    pk, sk = schedule_key(workspace_id)
    item: dict[str, Any] = {
        "pk": pk, "sk": sk, "workspace_id": workspace_id, "organization": organization, "enabled_at": enabled_at,
    }  # fmt: skip
    if due_at is not None:
        item["due_at"] = due_at
    return item
