"""`python -m bench.first_run`: the first-run model names the source of every segment and prints its totals
beside HCP Terraform's figure (the measurements themselves are the benchmark's: a process start and moto's ECS)."""

from __future__ import annotations

from bench import first_run


def test_every_segment_is_measured_here_or_cited_and_the_totals_stand_beside_hcps() -> None:
    rows = first_run.model(tick_s=0.05, start_s=1.5, image_mb=125, logs_cold_s=1.2)
    assert all(source.startswith(("measured here", "cited: ")) for *_, source in rows)
    [logs] = [row for row in rows if "logs function" in row[0]]  # measured, and within the runner's start
    assert logs[1:3] == (0.0, 0.0) and "1.20 s" in logs[3] and rows[-1][0] == "claim to terraform's first line"
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
    assert abs(cost.per_window - (cost.fargate + cost.ipv4 + cost.polls + cost.warm_up)) < 1e-12
    assert 0 < cost.warm_up < 0.0001  # one invocation of the logs function, its cold start long
    assert 0.5 < cost.month < 3 < 20 < cost.always_on_month  # ten bursts a working day vs one runner all month
    text = render_window(rows, (12.0, 25.0), cost, 15)
    assert "warm-window total" in text and "init 30 s before the plan" in text and "220 windows a month" in text
    lines = {line.split(":")[0].strip(): line for line in text.splitlines() if "before the plan:" in line}
    assert "12.30- 26.00 s" in lines["init  0 s before the plan"]  # no lead: the cold path, the runner asks at once
    assert " 0.40-  2.50 s" in lines["init 30 s before the plan"]  # it already polls: the warm path


def test_the_warm_path_counts_the_logs_function_s_cold_start_it_warms_up() -> None:
    from bench.warm_window import render_window, window_cost, window_rows, without_warm_up

    rows = window_rows(0.5, first_run.CITED["first_line"], logs_cold_s=1.2)
    assert rows[-1][1:3] == (0.0, 0.0) and rows[-1][3].startswith("measured here: 1.20 s")
    # not warmed up, the CLI's first read (as the run is queued) waits 1.2 s: more than a quick pick-up takes
    assert without_warm_up(rows, 1.2) == (0.1 + 1.2, 0.5 + 1.5)
    text = render_window(rows, (12.0, 25.0), window_cost(15, 0.5, 220), 15, 1.2)
    assert "(the logs function not warmed up)" in text and "the logs function's warm-up $" in text


def test_a_vcs_run_s_delivery_work_overlaps_the_runner_s_start() -> None:
    from bench.first_run_vcs import render_vcs, totals

    found = totals((12.0, 25.0), (0.3, 1.0))
    assert found["work"] == (0.4, 3.5)  # the tarball's download, the archive stored and the run queued
    assert found["before"] == (0.4 + 12.0 + 0.3, 3.5 + 25.0 + 1.0)  # the runner started once the run was queued
    assert found["now"] == (12.3, 26.0)  # started at the decision: the work is hidden in its start
    assert "runner started at the decision" in render_vcs((12.0, 25.0), (0.3, 1.0))
