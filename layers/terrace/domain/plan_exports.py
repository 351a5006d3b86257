"""Plan exports (HCP Terraform's `plan-exports`): a finished plan's data exported as a Sentinel mock bundle
(`domain/sentinel_mocks.py`), written asynchronously and kept for an hour.

An export is created `pending` (HCP's first status), written by the events worker (`finished`, or `errored` with
its reason) and, an hour after it finished, `expired`: its bundle is no longer served. Its id is `pe-…`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from terrace.domain.runs import Run
from terrace.domain.workspace import Workspace

PREFIX = "pe"
SENTINEL_MOCK_BUNDLE_V0 = "sentinel-mock-bundle-v0"
DATA_TYPES = frozenset({SENTINEL_MOCK_BUNDLE_V0})
EXPIRES_AFTER = timedelta(hours=1)  # HCP: exported data expires an hour after it is ready

PENDING, QUEUED, FINISHED, ERRORED, EXPIRED, CANCELED = (
    "pending",
    "queued",
    "finished",
    "errored",
    "expired",
    "canceled",
)


@dataclass
class PlanExport:
    id: str
    organization: str
    workspace_id: str
    run_id: str
    plan_id: str
    data_type: str
    created_at: str
    status: str = PENDING
    status_timestamps: dict[str, str] = field(default_factory=dict)  # HCP's `<status>-at` keys
    blob_key: str | None = None
    error_message: str | None = None
    version: int = 1


def _parse(at: str) -> datetime:
    return datetime.fromisoformat(at.replace("Z", "+00:00"))


def expires_at(export: PlanExport) -> datetime | None:
    finished = export.status_timestamps.get("finished-at")
    return _parse(finished) + EXPIRES_AFTER if export.status == FINISHED and finished else None


def _iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def expiry(export: PlanExport) -> str | None:
    """When a finished export expires, as `clock.iso` writes times (they sort as they follow)."""
    ends = expires_at(export)
    return _iso(ends) if ends is not None else None


def as_seen(export: PlanExport, now: datetime) -> PlanExport:
    """The export as a reader sees it at `now`: a finished one past its hour is `expired` (computed, not written:
    a read writes nothing)."""
    ends = expires_at(export)
    if ends is None or now < ends:
        return export
    stamps = dict(export.status_timestamps)
    stamps["expired-at"] = _iso(ends)
    return PlanExport(**{**export.__dict__, "status": EXPIRED, "status_timestamps": stamps})


def blob_key(export_id: str) -> str:
    return f"plan-exports/{export_id}/sentinel-mocks.tar.gz"


def tfrun_values(run: Run, ws: Workspace, organization: str, project: tuple[str, str]) -> dict[str, Any]:
    """The `tfrun` import's namespace of `run` (its variables by name and category, never their values)."""
    cost = run.cost_estimate
    return {
        "id": run.id,
        "created_at": run.created_at,
        "created_by": run.created_by,
        "message": run.message,
        "commit_sha": (run.vcs or {}).get("commit-sha"),
        "speculative": run.plan_only,
        "is_destroy": run.is_destroy,
        "refresh": run.refresh,
        "refresh_only": run.refresh_only,
        "replace_addrs": list(run.replace_addrs),
        "target_addrs": list(run.target_addrs) or None,
        "variables": {str(v.get("key")): {"category": "terraform", "sensitive": False} for v in run.variables},
        "organization": {"name": organization},
        "project": {"id": project[0], "name": project[1]},
        "workspace": {
            "id": ws.id,
            "name": ws.name,
            "created_at": ws.created_at,
            "description": ws.description,
            "execution_mode": ws.execution_mode,
            "auto_apply": ws.auto_apply,
            "tags": list(ws.tag_names),
            "tag_bindings": [{"key": k, "value": v} for k, v in ws.tag_bindings],
            "working_directory": ws.working_directory,
            "vcs_repo": None,
        },
        "cost_estimate": None
        if cost is None
        else {
            "prior_monthly_cost": cost.prior_monthly_cost,
            "proposed_monthly_cost": cost.proposed_monthly_cost,
            "delta_monthly_cost": cost.delta_monthly_cost,
        },
    }
