"""`python -m bench.first_run`: the first-run model names the source of every segment and prints its totals
beside HCP Terraform's figure (the measurements themselves are the benchmark's: a process start and moto's ECS)."""

from __future__ import annotations

from bench import first_run


def test_every_segment_is_measured_here_or_cited_and_the_totals_stand_beside_hcps() -> None:
    rows = first_run.model(tick_s=0.05, start_s=1.5, image_mb=125)
    assert all(source == "measured here" or source.startswith("cited: ") for *_, source in rows)
    assert all(0 <= low <= high for _, low, high, _ in rows)
    text = first_run.render(rows, layers=5)
    cold_low = sum(r[1] for r in rows)
    assert "cold total" in text and f"{cold_low:6.2f}" in text and "HCP Terraform" in text and "(target: 2 s)" in text


def test_the_image_is_measured_from_the_dockerfile_and_this_environment() -> None:
    size_mb, layers = first_run.image()
    assert size_mb > 0 and layers == 5  # apt, tools, venv, the tofu link, the job users


def test_the_warm_window_path_is_sourced_and_costs_a_fraction_of_a_runner_kept_all_month() -> None:
    from bench.warm_window import render_window, window_cost, window_rows

    rows = window_rows(1.0, first_run.CITED["first_line"])
    assert all(source.startswith(("measured here", "cited: ", "set here: ")) for *_, source in rows)
    warm_high = sum(r[2] for r in rows)
    assert warm_high <= 2.5  # the poll's second is the widest part; the cold path is 13 s and more
    cost = window_cost(15, 1.0, 220)
    assert abs(cost.per_window - (cost.fargate + cost.ipv4 + cost.polls)) < 1e-12
    assert 0.5 < cost.month < 3 < 20 < cost.always_on_month  # ten bursts a working day vs one runner all month
    text = render_window(rows, (12.0, 25.0), cost, 15)
    assert "warm-window total" in text and "init 30 s before the plan" in text and "220 windows a month" in text
    lines = {line.split(":")[0].strip(): line for line in text.splitlines() if "before the plan:" in line}
    assert "12.30- 26.00 s" in lines["init  0 s before the plan"]  # no lead: the cold path, the runner asks at once
    assert " 0.40-  2.50 s" in lines["init 30 s before the plan"]  # it already polls: the warm path
