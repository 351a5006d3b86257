"""Cost estimates: the run stage between a finished plan and its confirmation (HCP Terraform's
`cost_estimating` -> `cost_estimated`), computed on the server from the plan JSON the runner uploaded
and the price table in `domain/aws_prices.py`.

A run gets its cost estimate (`ce-<run suffix>`, status pending) when it is created in an organization
with `cost-estimation-enabled`. When the plan finishes, `estimate` fills it in the same write that
records the plan's end, so clients that read the run after its plan see a finished estimate.
"""

from __future__ import annotations

import json
import logging

from terrace.adapters.blobs import BlobStore
from terrace.domain import clock
from terrace.domain import cost_estimation as ce
from terrace.domain.errors import NotFound
from terrace.domain.ids import looks_like
from terrace.domain.principal import Principal
from terrace.domain.runs import Run, run_id_of
from terrace.services.runs.runs import RunService

log = logging.getLogger("terrace.cost_estimates")

# Plan JSON documents past this size are not parsed for an estimate (the estimate errors instead).
MAX_PLAN_JSON_BYTES = 64 * 1024 * 1024


class CostEstimateService:
    def __init__(self, runs: RunService, blobs: BlobStore) -> None:
        self._runs, self._blobs = runs, blobs

    def run_of(self, principal: Principal, cost_estimate_id: str) -> Run:
        """The run a ce-… id belongs to, if the caller may read its runs (READ_RUNS)."""
        if not looks_like(cost_estimate_id, "ce"):
            raise NotFound(f"cost estimate {cost_estimate_id} not found")
        try:
            run = self._runs.get(principal, run_id_of(cost_estimate_id))
        except NotFound as exc:
            raise NotFound(f"cost estimate {cost_estimate_id} not found") from exc
        if run.cost_estimate is None:
            raise NotFound(f"cost estimate {cost_estimate_id} not found")
        return run

    def estimate(self, run: Run) -> None:
        """Fill in the run's cost estimate from its plan JSON: finished, or errored with the reason.
        Called once the finished plan is recorded (`plans.record`: the JSON's size); the caller saves the run."""
        estimate = run.cost_estimate
        if estimate is None:
            return
        now = clock.now_iso()
        estimate.mark(ce.CE_QUEUED, now)
        if run.target_addrs:  # a targeted plan leaves out what it does not target: no estimate, as in HCP
            estimate.mark(ce.CE_SKIPPED, now)
            return
        try:
            ce.apply_estimate(estimate, ce.estimate(self._plan_json(run)), now)
        except ValueError as exc:
            estimate.error_message = f"the cost estimate failed: {exc}"
            estimate.mark(ce.CE_ERRORED, now)

    def _plan_json(self, run: Run) -> object:
        key = run.plan.json_key
        size = run.plan.json_size  # of the stored object, recorded as the plan finished (plans.record): None if none
        if key is None or size is None:
            raise ValueError("the plan uploaded no JSON")
        if size > MAX_PLAN_JSON_BYTES:
            raise ValueError(f"the plan JSON is larger than {MAX_PLAN_JSON_BYTES} bytes")
        try:
            return json.loads(self._blobs.get(key))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ValueError("the plan JSON is not JSON") from exc
