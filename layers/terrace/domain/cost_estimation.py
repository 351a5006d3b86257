"""Cost estimation from a plan's JSON (`terraform show -json`), as HCP Terraform's run stage does it.

Every managed resource of the plan's `resource_changes` counts. One whose type and attributes the price
table (`domain/aws_prices.py`) prices is matched; any other is unmatched and adds nothing: no price is
guessed. Prior monthly cost sums what exists before the change (`change.before`), proposed what exists
after it (`change.after`); delta is their difference.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from terrace.domain import aws_prices as prices

# Cost estimate statuses (go-tfe's CostEstimateStatus).
CE_PENDING, CE_QUEUED, CE_FINISHED = "pending", "queued", "finished"
CE_ERRORED, CE_CANCELED, CE_SKIPPED = "errored", "canceled", "skipped_due_to_targeting"
CE_FINAL = frozenset({CE_FINISHED, CE_ERRORED, CE_CANCELED, CE_SKIPPED})


@dataclass
class CostEstimate:
    id: str
    status: str = CE_PENDING
    resources_count: int = 0
    matched_resources_count: int = 0
    unmatched_resources_count: int = 0
    prior_monthly_cost: str = "0.00"
    proposed_monthly_cost: str = "0.00"
    delta_monthly_cost: str = "0.00"
    error_message: str | None = None
    timestamps: dict[str, str] = field(default_factory=dict)

    def mark(self, status: str, at: str) -> None:
        self.status = status
        self.timestamps[f"{status.replace('_', '-')}-at"] = at

    @property
    def final(self) -> bool:
        return self.status in CE_FINAL


def for_run(run_id: str, at: str) -> CostEstimate:
    """A run's cost estimate, pending until its plan finishes (`ce-X` belongs to `run-X`)."""
    estimate = CostEstimate(id="ce-" + run_id.split("-", 1)[1])
    estimate.mark(CE_PENDING, at)
    return estimate


@dataclass(frozen=True)
class Estimate:
    resources: int
    matched: int
    prior: float
    proposed: float


def _money(value: float) -> str:
    return f"{value:.2f}"


def apply_estimate(ce: CostEstimate, estimate: Estimate, at: str) -> None:
    ce.resources_count, ce.matched_resources_count = estimate.resources, estimate.matched
    ce.unmatched_resources_count = estimate.resources - estimate.matched
    ce.prior_monthly_cost, ce.proposed_monthly_cost = _money(estimate.prior), _money(estimate.proposed)
    ce.delta_monthly_cost = _money(estimate.proposed - estimate.prior)
    ce.error_message = None
    ce.mark(CE_FINISHED, at)


def _number(value: Any, default: float = 0.0) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return default
    return float(value)


def _ebs(values: dict[str, Any]) -> float | None:
    kind = values.get("type") or "gp2"
    per_gb = prices.EBS_GB_MONTH.get(kind)
    size = values.get("size")
    if per_gb is None or isinstance(size, bool) or not isinstance(size, (int, float)):
        return None
    monthly = per_gb * size
    iops = _number(values.get("iops"))
    if kind in prices.EBS_IOPS_MONTH:
        monthly += prices.EBS_IOPS_MONTH[kind] * iops
    if kind == "gp3":
        monthly += prices.EBS_GP3_IOPS_MONTH * max(0.0, iops - prices.EBS_GP3_FREE_IOPS)
        throughput = _number(values.get("throughput"))
        monthly += prices.EBS_GP3_THROUGHPUT_MONTH * max(0.0, throughput - prices.EBS_GP3_FREE_THROUGHPUT)
    return monthly


def _rds(values: dict[str, Any]) -> float | None:
    family = prices.RDS_ENGINE_FAMILY.get(str(values.get("engine") or ""))
    hourly = prices.RDS_HOURLY.get(family or "", {}).get(str(values.get("instance_class") or ""))
    storage = prices.RDS_STORAGE_GB_MONTH.get(values.get("storage_type") or "gp2")
    if hourly is None or storage is None:
        return None
    copies = 2 if values.get("multi_az") is True else 1
    return copies * (hourly * prices.HOURS_PER_MONTH + storage * _number(values.get("allocated_storage")))


def monthly_cost(resource_type: str, values: dict[str, Any]) -> float | None:
    """USD per month of one resource with these attribute values; None when the table cannot price it."""
    hourly: float | None = None
    if resource_type in prices.FREE:
        return 0.0
    if resource_type in prices.FIXED_MONTHLY:
        return prices.FIXED_MONTHLY[resource_type]
    if resource_type in prices.FIXED_HOURLY:
        hourly = prices.FIXED_HOURLY[resource_type]
    elif resource_type == "aws_instance":
        hourly = prices.EC2_HOURLY.get(str(values.get("instance_type") or ""))
    elif resource_type in ("aws_lb", "aws_alb"):
        hourly = prices.LB_HOURLY.get(values.get("load_balancer_type") or "application")
    elif resource_type == "aws_elasticache_cluster":
        node = prices.ELASTICACHE_HOURLY.get(str(values.get("node_type") or ""))
        hourly = None if node is None else node * max(1.0, _number(values.get("num_cache_nodes"), 1.0))
    elif resource_type == "aws_ebs_volume":
        return _ebs(values)
    elif resource_type == "aws_db_instance":
        return _rds(values)
    return None if hourly is None else hourly * prices.HOURS_PER_MONTH


def _is_aws(change: dict[str, Any]) -> bool:
    provider = str(change.get("provider_name") or "")
    return provider == "aws" or provider.endswith("/hashicorp/aws") or provider == "hashicorp/aws"


def estimate(plan: Any) -> Estimate:
    """The estimate of a plan JSON document. Raises ValueError when it is not one."""
    if not isinstance(plan, dict):
        raise ValueError("the plan JSON is not an object")
    changes = plan.get("resource_changes") or []
    if not isinstance(changes, list):
        raise ValueError("the plan JSON's resource_changes is not a list")
    resources = matched = 0
    prior = proposed = 0.0
    for change in changes:
        if not isinstance(change, dict) or change.get("mode", "managed") != "managed":
            continue
        resources += 1
        detail = change.get("change")
        before, after = (detail.get("before"), detail.get("after")) if isinstance(detail, dict) else (None, None)
        kind = str(change.get("type") or "")
        costs = [
            monthly_cost(kind, values) if _is_aws(change) else None
            for values in (before, after)
            if isinstance(values, dict)
        ]
        if not costs or any(cost is None for cost in costs):
            continue
        matched += 1
        if isinstance(before, dict):
            prior += monthly_cost(kind, before) or 0.0
        if isinstance(after, dict):
            proposed += monthly_cost(kind, after) or 0.0
    return Estimate(resources=resources, matched=matched, prior=round(prior, 2), proposed=round(proposed, 2))
