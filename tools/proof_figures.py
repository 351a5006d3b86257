"""`python tools/proof_figures.py`: one line per figures file the proof's load and soak scenarios wrote in
.build/proof/ (its seed, its command, its ratios against the same-run baselines); `make proof` prints them last."""

from __future__ import annotations

import json
import sys
from pathlib import Path

FOLDER = Path(__file__).resolve().parents[1] / ".build" / "proof"
SHOWN = ("seed", "writes_per_s_ratio", "write_p50_ratio", "write_p99_ratio", "ratio", "runs_per_min",
         "ideal_runs_per_min", "jain_fairness_of_turnaround", "cycles")  # fmt: skip


def main() -> int:
    files = sorted(FOLDER.glob("*.json"))
    if not files:
        print(f"no figures in {FOLDER}")
        return 0
    for path in files:
        figures = json.loads(path.read_text())
        shown = ", ".join(
            f"{key} {figures[key]:.3g}" if isinstance(figures[key], float) else f"{key} {figures[key]}"
            for key in SHOWN
            if key in figures
        )
        print(f"{path.stem}: {shown}  [{figures.get('when')}, {figures.get('command')}]")
        if "flatness" in figures:
            for key, value in figures["flatness"].items():
                print(f"    {key}: {value['first']:.2f} -> {value['second']:.2f} ({value['change']:+.1%})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
