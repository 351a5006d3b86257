"""LocalProcessLauncher: starts runner processes up to a maximum, reaps them, stops them."""

from __future__ import annotations

import os
import stat
import sys
import time
from pathlib import Path

from terrace.adapters.runner_launchers import LocalProcessLauncher


def test_launch_up_to_the_maximum_and_stop_all(tmp_path: Path) -> None:
    fake_python = tmp_path / "python"
    fake_python.write_text(f'#!/bin/sh\necho "$@" >> {tmp_path}/argv\nexec sleep 30\n')
    fake_python.chmod(fake_python.stat().st_mode | stat.S_IEXEC)
    launcher = LocalProcessLauncher({"PATH": os.environ["PATH"]}, max_processes=2, python=str(fake_python))
    assert launcher.launch(5) == 2
    assert launcher.launch(1) == 0
    assert launcher.live_count() == 2
    argv = tmp_path / "argv"
    deadline = time.monotonic() + 10
    while (not argv.exists() or len(argv.read_text().splitlines()) < 2) and time.monotonic() < deadline:
        time.sleep(0.02)
    launcher.stop_all(timeout_s=5)
    assert launcher.live_count() == 0
    assert (tmp_path / "argv").read_text().splitlines() == ["-m terrace.runner", "-m terrace.runner"]


def test_exited_runners_are_reaped() -> None:
    # A real runner with no configuration exits at once (exit code 2, clear message).
    launcher = LocalProcessLauncher({"PATH": os.environ["PATH"]}, max_processes=3, python=sys.executable)
    assert launcher.launch(1) == 1
    deadline = time.monotonic() + 20
    while launcher.live_count() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert launcher.live_count() == 0
    assert launcher.launch(3) == 3
    launcher.stop_all()
