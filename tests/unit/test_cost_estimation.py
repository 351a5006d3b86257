"""Cost estimation from plan JSON and the shipped AWS price table."""

from __future__ import annotations

from typing import Any

import pytest
from terrace.domain import aws_prices
from terrace.domain.cost_estimation import estimate, monthly_cost


def change(kind: str, before: dict[str, Any] | None, after: dict[str, Any] | None, **extra: Any) -> dict[str, Any]:
    actions = ["create"] if before is None else ["delete"] if after is None else ["update"]
    return {
        "address": f"{kind}.x",
        "mode": "managed",
        "type": kind,
        "name": "x",
        "provider_name": "registry.terraform.io/hashicorp/aws",
        "change": {"actions": actions, "before": before, "after": after},
        **extra,
    }


def test_an_instance_type_change_prices_both_sides() -> None:
    plan = {"resource_changes": [change("aws_instance", {"instance_type": "t3.micro"}, {"instance_type": "m5.large"})]}
    found = estimate(plan)
    assert (found.resources, found.matched) == (1, 1)
    assert found.prior == round(0.0104 * 730, 2) and found.proposed == round(0.096 * 730, 2)


def test_unpriced_and_unknown_resources_are_counted_not_guessed() -> None:
    plan = {
        "resource_changes": [
            change("aws_instance", None, {"instance_type": "x9.mega"}),  # not in the table
            change("aws_instance", None, {}),  # instance type unknown until apply
            {**change("null_resource", None, {}), "provider_name": "registry.terraform.io/hashicorp/null"},
            {**change("aws_instance", None, {"instance_type": "t3.micro"}), "mode": "data"},  # not managed
            change("aws_nat_gateway", None, {}),
        ]
    }
    found = estimate(plan)
    assert (found.resources, found.matched) == (4, 1)
    assert found.prior == 0 and found.proposed == round(0.045 * 730, 2)


def test_a_destroy_lowers_the_cost() -> None:
    found = estimate({"resource_changes": [change("aws_lb", {"load_balancer_type": "network"}, None)]})
    assert found.prior == round(aws_prices.LB_HOURLY["network"] * 730, 2) and found.proposed == 0


@pytest.mark.parametrize(
    ("kind", "values", "expected"),
    [
        ("aws_ebs_volume", {"type": "gp3", "size": 100, "iops": 4000, "throughput": 125}, 100 * 0.08 + 1000 * 0.005),
        ("aws_ebs_volume", {"size": 10}, 10 * 0.10),  # gp2 when the type is unset
        ("aws_ebs_volume", {"type": "gp3"}, None),  # size unknown
        ("aws_db_instance", {"engine": "postgres", "instance_class": "db.t3.micro", "allocated_storage": 20}, None),
        ("aws_db_instance", {"engine": "oracle-ee", "instance_class": "db.t3.micro"}, None),
        ("aws_kms_key", {}, 1.0),
        ("aws_vpc", {}, 0.0),
        ("aws_s3_bucket", {}, None),  # usage-priced
    ],
)
def test_monthly_cost_of_each_kind(kind: str, values: dict[str, Any], expected: float | None) -> None:
    if kind == "aws_db_instance" and expected is None and values["engine"] == "postgres":
        expected = 0.018 * 730 + 20 * 0.115
    found = monthly_cost(kind, values)
    assert found == (None if expected is None else pytest.approx(expected))


def test_multi_az_databases_cost_twice() -> None:
    single = {"engine": "mysql", "instance_class": "db.m5.large", "allocated_storage": 100}
    assert monthly_cost("aws_db_instance", {**single, "multi_az": True}) == pytest.approx(
        2 * (monthly_cost("aws_db_instance", single) or 0)
    )


@pytest.mark.parametrize("plan", [[], {"resource_changes": "x"}, "text"])
def test_what_is_not_a_plan_is_an_error(plan: Any) -> None:
    with pytest.raises(ValueError):
        estimate(plan)
