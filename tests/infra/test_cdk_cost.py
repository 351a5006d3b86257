"""bench/cost.py prices what the template actually contains."""

from __future__ import annotations

import pytest

from bench import cost

pytestmark = pytest.mark.infra


def _lines(template):
    return {line.item: line for line in cost.estimate(template)}


def test_idle_cost_is_small_and_runs_are_priced(synth):
    lines = _lines(synth.template)
    idle = sum(line.idle_month for line in lines.values())
    assert 0 < idle < 10, "idle is storage-class money, no servers"
    assert lines["KMS key"].idle_month == cost.PRICES["kms_key_month"]
    assert lines["Secrets Manager secrets"].idle_month == pytest.approx(
        2 * cost.PRICES["secret_month"]
    )  # admin token, URL signing
    fargate = lines["Fargate arm64 1 vCPU/2 GB"]
    # 2 phases x (60 s of work + 60 s idle tail from the task definition) of 1 vCPU + 2 GB
    expected = 240 / 3600 * (cost.PRICES["fargate_arm_vcpu_h"] + 2 * cost.PRICES["fargate_arm_gb_h"]) * 1000
    assert fargate.per_1000_runs == pytest.approx(expected)
    assert lines["Interface endpoints"].idle_month == 0


def test_private_subnets_option_shows_its_endpoint_cost(synth_options):
    lines = _lines(synth_options.template)
    assert lines["Interface endpoints"].idle_month == pytest.approx(
        3 * 2 * cost.PRICES["interface_endpoint_az_h"] * 720
    )
    assert "Runner public IPv4" not in lines


def test_render_prints_a_dated_table(synth):
    text = cost.render(cost.estimate(synth.template))
    assert cost.PRICES_AS_OF in text and "total" in text and "$/1,000 runs" in text
