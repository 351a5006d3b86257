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
