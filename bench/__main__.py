"""`python -m bench [--quick | --smoke] [--only NAME ...] [--results DIR]`: run the benchmarks, print a table, write
results/latest.json."""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import os
import platform
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from bench.common import BENCH_DIR, Outcome, Size

BENCHMARKS = (
    "state_roundtrip",
    "api_latency",
    "run_overhead",
    "queue_throughput",
    "lock_contention",
    "embedded",
    "pickup",
    "cold_start",
    "call_counts",
)


def _fmt(value: Any, unit: str = "") -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        if unit == "s" and value < 1:
            return f"{value * 1000:.1f} ms"
        return f"{value:.2f}{' ' + unit if unit else ''}"
    return f"{value}{' ' + unit if unit and not isinstance(value, str) else ''}"


def print_table(outcomes: list[Outcome]) -> None:
    header = ("benchmark", "metric", "terrace", "baseline", "ratio", "target")
    lines = [header]
    for outcome in outcomes:
        for row in outcome.rows:
            ratio = f"{row['ratio']:.2f}x" if row["ratio"] is not None else "-"
            lines.append(
                (
                    outcome.name,
                    row["metric"],
                    _fmt(row["value"], row["unit"]),
                    _fmt(row["baseline"], row["unit"]),
                    ratio,
                    row["target"],
                )
            )
    widths = [max(len(str(line[i])) for line in lines) for i in range(len(header))]
    for n, line in enumerate(lines):
        print("  ".join(str(cell).ljust(widths[i]) for i, cell in enumerate(line)))
        if n == 0:
            print("  ".join("-" * w for w in widths))
    for outcome in outcomes:
        for note in outcome.notes:
            print(f"* {outcome.name}: {note}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    sizes = parser.add_mutually_exclusive_group()
    sizes.add_argument("--quick", action="store_true", help="fewer repetitions and smaller loads (over 10 minutes)")
    sizes.add_argument(
        "--smoke",
        action="store_true",
        help="every step once at the smallest sizes, figures meaningless: does each benchmark still run?",
    )
    parser.add_argument(
        "--only",
        action="append",
        choices=BENCHMARKS,
        metavar="NAME",
        help=f"run only this benchmark (repeatable): {', '.join(BENCHMARKS)}",
    )
    parser.add_argument(
        "--results", type=Path, default=BENCH_DIR / "results", help="where latest.json and stderr.log go"
    )
    args = parser.parse_args(argv)
    size = Size.SMOKE if args.smoke else Size.QUICK if args.quick else Size.FULL
    out_dir = args.results
    out_dir.mkdir(parents=True, exist_ok=True)
    log_path = out_dir / "stderr.log"
    print(f"(runner and server logs go to {log_path})", flush=True)
    log_file = log_path.open("w")
    sys.stdout = os.fdopen(os.dup(1), "w", buffering=1)  # the table keeps the real stdout ...
    os.dup2(log_file.fileno(), 1)  # ... while runner processes (which inherit fds 1 and 2) log to the file
    os.dup2(log_file.fileno(), 2)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    outcomes: list[Outcome] = []
    failed: dict[str, str] = {}
    timings: dict[str, float] = {}
    for name in args.only or BENCHMARKS:
        print(f"== {name}{'' if size is Size.FULL else f' ({size.value})'} ...", flush=True)
        start = time.perf_counter()
        try:
            outcomes.append(importlib.import_module(f"bench.{name}").run(size))
        except Exception:
            failed[name] = traceback.format_exc()
            print(failed[name], flush=True)
        timings[name] = time.perf_counter() - start
        print(f"   {name}: {timings[name]:.1f} s", flush=True)
    print()
    print_table(outcomes)
    results = {
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "size": size.value,
        "machine": {
            "python": platform.python_version(),
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
        },
        "wall_s": timings,
        "benchmarks": {o.name: {"rows": o.rows, "details": o.details, "notes": o.notes} for o in outcomes},
        "failed": failed,
    }
    (out_dir / "latest.json").write_text(json.dumps(results, indent=2, default=str) + "\n")
    print(f"\nwrote {out_dir / 'latest.json'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
