"""Health assessments: drift detection and continuous validation, as HCP Terraform names them.

An assessment is a refresh-only, plan-only run (`Run.assessment`) of a workspace's current configuration and
state; its result is read from the run's JSON plan: `resource_drift` (what changed outside Terraform) and
`checks` (the `check` blocks, preconditions and postconditions). The schedule is a sparse index: one item
per workspace with assessments on (`services/shared_keys.py`), holding when it is next due; each workspace
gets its own offset inside the interval (`first_due`), so they are spread, not all at once.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass
from typing import Any

RESULT_PREFIX = "asmtres"
ENABLED_ATTRIBUTE = "assessments-enabled"
# notification triggers (`domain/notifications.py` lists them among a workspace's)
DRIFTED, CHECK_FAILURE, FAILED = "assessment:drifted", "assessment:check_failure", "assessment:failed"
CHECK_STATUSES = ("pass", "fail", "error", "unknown")


def offset(workspace_id: str, interval_s: int) -> float:
    """A workspace's own place in the interval, the same every time (a hash of its id)."""
    digest = int.from_bytes(hashlib.sha256(workspace_id.encode()).digest()[:8], "big")
    return float(digest % max(1, interval_s))


def first_due(workspace_id: str, now: float, interval_s: int) -> float:
    """The next time on the workspace's own grid (its offset plus whole intervals) after `now`."""
    base = offset(workspace_id, interval_s)
    if base > now:
        return base
    return base + ((now - base) // interval_s + 1) * interval_s


def due_at(item: dict[str, Any], interval_s: int) -> float:
    stored = item.get("due_at")
    if stored is not None:
        return float(stored)
    return first_due(str(item["workspace_id"]), float(item.get("enabled_at") or 0), interval_s)


def next_due(workspace_id: str, now: float, interval_s: int) -> float:
    """After an assessment (or a skip): the next slot of the workspace's grid, at least half an interval away."""
    due = first_due(workspace_id, now, interval_s)
    return due if due - now >= interval_s / 2 else due + interval_s


def enabled(extra: dict[str, Any]) -> bool:
    return extra.get(ENABLED_ATTRIBUTE) is True


@dataclass(frozen=True)
class AssessmentResult:
    id: str
    workspace_id: str
    organization: str
    run_id: str
    created_at: str
    succeeded: bool
    drifted: bool
    error_msg: str | None = None
    checks: dict[str, int] = dataclasses.field(default_factory=dict)  # status -> count
    resources_drifted: int = 0
    resources_undrifted: int = 0
    json_key: str | None = None  # the run's JSON plan (`json-output`)

    @property
    def all_checks_succeeded(self) -> bool:
        return self.succeeded and not any(self.checks.get(s, 0) for s in ("fail", "error", "unknown"))

    def triggers(self) -> list[str]:
        """The notification triggers this result fires."""
        if not self.succeeded:
            return [FAILED]
        found = [DRIFTED] if self.drifted else []
        return found + ([CHECK_FAILURE] if self.checks.get("fail", 0) or self.checks.get("error", 0) else [])


# reading a JSON plan --------------------------------------------------------------------------------------
def _managed(module: dict[str, Any]) -> int:
    own = sum(1 for r in module.get("resources") or [] if isinstance(r, dict) and r.get("mode", "managed") == "managed")
    return own + sum(_managed(child) for child in module.get("child_modules") or [] if isinstance(child, dict))


def drift_counts(plan: dict[str, Any]) -> tuple[int, int]:
    """(drifted, undrifted) managed resources: `resource_drift` entries that are not no-ops, against the
    resources of the prior state."""
    drift = plan.get("resource_drift") or []
    drifted = {
        str(d.get("address"))
        for d in drift
        if isinstance(d, dict)
        and d.get("mode", "managed") == "managed"
        and (d.get("change") or {}).get("actions") not in (None, ["no-op"])
    }
    root = ((plan.get("prior_state") or {}).get("values") or {}).get("root_module") or {}
    total = _managed(root) if isinstance(root, dict) else 0
    return len(drifted), max(0, total - len(drifted))


def check_counts(plan: dict[str, Any]) -> dict[str, int]:
    """How many checkable objects (check blocks, conditions) passed, failed, errored or are unknown."""
    counts = dict.fromkeys(CHECK_STATUSES, 0)
    for check in plan.get("checks") or []:
        status = check.get("status") if isinstance(check, dict) else None
        if status in counts:
            counts[str(status)] += 1
    return counts


# what the Health tab shows of a JSON plan ------------------------------------------------------------------
SHOWN_MAX = 200  # drifted resources and failing checks shown
VALUE_SHOWN_MAX = 300  # characters of one attribute's value


@dataclass(frozen=True)
class Drifted:
    address: str
    actions: list[str]
    changes: list[tuple[str, str, str]]  # (attribute, before, after), values as JSON, shortened


@dataclass(frozen=True)
class FailingCheck:
    address: str
    status: str  # fail, error or unknown
    messages: list[str]


def _shown(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= VALUE_SHOWN_MAX else text[: VALUE_SHOWN_MAX - 1] + "…"


def drifted_resources(plan: dict[str, Any]) -> list[Drifted]:
    """The managed resources that changed outside Terraform, each with the attributes that changed."""
    found: list[Drifted] = []
    for entry in plan.get("resource_drift") or []:
        change = entry.get("change") if isinstance(entry, dict) else None
        if not isinstance(change, dict) or change.get("actions") in (None, ["no-op"]):
            continue
        if entry.get("mode", "managed") != "managed":
            continue
        before: dict[str, Any] = change["before"] if isinstance(change.get("before"), dict) else {}
        after: dict[str, Any] = change["after"] if isinstance(change.get("after"), dict) else {}
        changed = [
            (str(key), _shown(before.get(key)), _shown(after.get(key)))
            for key in sorted({*before, *after})
            if before.get(key) != after.get(key)
        ]
        found.append(Drifted(str(entry.get("address")), [str(a) for a in change.get("actions") or []], changed))
        if len(found) >= SHOWN_MAX:
            break
    return found


def _display(address: Any) -> str:
    return str(address.get("to_display") or "") if isinstance(address, dict) else str(address or "")


def failing_checks(plan: dict[str, Any]) -> list[FailingCheck]:
    """The checkable objects (check blocks, conditions) that did not pass, each with its problems' messages."""
    found: list[FailingCheck] = []
    for check in plan.get("checks") or []:
        if not isinstance(check, dict) or check.get("status") not in ("fail", "error", "unknown"):
            continue
        messages = [
            str(problem.get("message"))
            for instance in check.get("instances") or []
            if isinstance(instance, dict)
            for problem in instance.get("problems") or []
            if isinstance(problem, dict) and problem.get("message")
        ]
        found.append(FailingCheck(_display(check.get("address")), str(check["status"]), messages))
        if len(found) >= SHOWN_MAX:
            break
    return found
