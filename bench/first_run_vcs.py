"""The VCS-driven first run, part of `python -m bench.first_run`: a push's delivery queues its run with no `init`
before it, so no warm window is open; what the runner's start can overlap is the delivery's own work after the run
was decided (the forge's tarball downloaded, the archive stored, the run created and queued).

Since `services/vcs/ingress.py` starts the runner once the run is decided (`expect_runner`), before the archive is
read, that work runs while Fargate places the task; before, the runner was started only when the run was queued,
after it. The download cannot be measured here (no forge is reachable from this machine): its range is set from
the tarball's size and a download rate, and says so; Terrace's share is the pick-up bench's (cited)."""

from __future__ import annotations

from bench.warm_window import UPLOAD

Row = tuple[str, float, float, str]
DOWNLOAD = (0.3, 3.0, "set here (no forge reachable from this machine): the forge's tarball of a commit, "
            "1-10 MB at 5-30 MB/s, and the archive endpoint's redirect; submodules are cloned, longer")  # fmt: skip


def vcs_rows() -> list[Row]:
    """What the delivery does after it decided the run, before the run is queued."""
    return [
        ("the forge's tarball downloaded", DOWNLOAD[0], DOWNLOAD[1], DOWNLOAD[2]),
        ("the archive stored, the run created and queued", UPLOAD[0], UPLOAD[1], f"cited: {UPLOAD[2]}"),
    ]


def totals(to_poll: tuple[float, float], first_line: tuple[float, float]) -> dict[str, tuple[float, float]]:
    """From the run's decision to the first log line: the runner started when the run was queued (before), and when
    it was decided (now: its start overlaps the delivery's work)."""
    rows = vcs_rows()
    work = (sum(r[1] for r in rows), sum(r[2] for r in rows))
    before = (work[0] + to_poll[0] + first_line[0], work[1] + to_poll[1] + first_line[1])
    now = (max(work[0], to_poll[0]) + first_line[0], max(work[1], to_poll[1]) + first_line[1])
    return {"work": work, "before": before, "now": now}


def render_vcs(to_poll: tuple[float, float], first_line: tuple[float, float]) -> str:
    rows = vcs_rows()
    width = max(len(r[0]) for r in rows) + 4
    found = totals(to_poll, first_line)
    out = ["", "A VCS-driven run (a push's delivery), from the run's decision to the first log line:"]
    out += [f"  {name:<{width}}  {low:6.2f}-{high:6.2f} s  {source}" for name, low, high, source in rows]
    out.append(f"  {'runner started at the queueing':<{width}}  {found['before'][0]:6.2f}-{found['before'][1]:6.2f} s"
               "  (before: the runner's start followed that work)")  # fmt: skip
    out.append(f"  {'runner started at the decision':<{width}}  {found['now'][0]:6.2f}-{found['now'][1]:6.2f} s"
               f"  (now: {found['work'][0]:.2f}-{found['work'][1]:.2f} s overlap the runner's start)")  # fmt: skip
    return "\n".join(out)
