"""Query runs: `terraform query` (terraform 1.14+) run remotely, as HCP Terraform's Query Runs API shapes them.

A query run is a run (`Run.query`) whose plan phase runs `terraform query -json` instead of a plan: plan-only,
never locking the workspace, never applied, in the lowest lane, with no task stage and no cost estimate. Its log
is the plan phase's (JSON lines the CLI renders, with the configuration it generated when `generate_config_out`).
It is listed under its workspace's query runs, never its runs, and addressed as `qry-<suffix>` (the run's
`run-<suffix>`). Its status is HCP's: pending, queued, running, finished, errored, canceled.
"""

from __future__ import annotations

from terrace.domain import runs as rs
from terrace.domain.runs import Run

PREFIX = "qry"
SOURCE = "tfe-api"  # the only source HCP names
QUERY_SINCE = (1, 14)  # terraform's first release with `terraform query`

PENDING, QUEUED, RUNNING = "pending", "queued", "running"
FINISHED, ERRORED, CANCELED = "finished", "errored", "canceled"
FINAL = frozenset({FINISHED, ERRORED, CANCELED})

_STATUS = {
    rs.PENDING: PENDING,
    rs.PLAN_QUEUED: QUEUED,
    rs.PLANNING: RUNNING,
    rs.PLANNED: RUNNING,  # recorded on the way to planned_and_finished, in the same write
    rs.PLANNED_AND_FINISHED: FINISHED,
    rs.ERRORED: ERRORED,
    rs.CANCELED: CANCELED,
    rs.FORCE_CANCELED: CANCELED,
    rs.DISCARDED: CANCELED,
}
# HCP's status-timestamps key <- the run's status timestamp it comes from
_TIMESTAMPS = {
    "queuing-at": "plan-queued-at",
    "running-at": "planning-at",
    "finished-at": "planned-and-finished-at",
    "errored-at": "errored-at",
    "canceled-at": "canceled-at",
    "force-canceled-at": "force-canceled-at",
}


def query_id(run_id: str) -> str:
    return f"{PREFIX}-{rs.suffix(run_id)}"


def run_id_of(query_run_id: str) -> str | None:
    """The run behind `qry-<suffix>` (None: not a query run's id)."""
    prefix, _, tail = query_run_id.partition("-")
    return f"run-{tail}" if prefix == PREFIX and tail else None


def status(run: Run) -> str:
    return _STATUS.get(run.status, RUNNING)


def status_timestamps(run: Run) -> dict[str, str]:
    found = {key: run.status_timestamps.get(source) for key, source in _TIMESTAMPS.items()}
    return {key: at for key, at in found.items() if at}


def supports_query(product: str, version: str) -> bool:
    """Whether a runner binary has `terraform query` (OpenTofu has none)."""
    numbers = version.split(".")[:2]
    if product != "Terraform" or len(numbers) < 2 or not all(n.isdigit() for n in numbers):
        return False
    return (int(numbers[0]), int(numbers[1])) >= QUERY_SINCE
