"""LocalProcessLauncher: starts one runner process per credential (its organization's token in its environment)
up to a maximum, counts them per organization, retires and reaps them, stops them."""

from __future__ import annotations

import os
import stat
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from terrace.adapters.local_runner_launcher import LocalProcessLauncher
from terrace.adapters.runner_launcher import RunnerCredential


def credential(org: str, n: int) -> RunnerCredential:
    return RunnerCredential(f"runner-{org}-{n}", org, f"at-{org}-{n}", f"secret-{org}-{n}", retire_at=1234)


WAIT_S = 30  # generous: a loaded machine starts processes slowly


@pytest.fixture
def launchers() -> Iterator[Callable[..., LocalProcessLauncher]]:
    """launchers(python, max_processes) -> a LocalProcessLauncher whose processes are stopped after the test."""
    made: list[LocalProcessLauncher] = []

    def make(python: str, max_processes: int) -> LocalProcessLauncher:
        made.append(LocalProcessLauncher({"PATH": os.environ["PATH"]}, max_processes=max_processes, python=python))
        return made[-1]

    yield make
    for launcher in made:
        launcher.stop_all(timeout_s=10)


def _wait_lines(path: Path, count: int) -> list[str]:
    deadline = time.monotonic() + WAIT_S
    while (not path.exists() or len(path.read_text().splitlines()) < count) and time.monotonic() < deadline:
        time.sleep(0.02)
    return sorted(path.read_text().splitlines())


def test_launch_per_organization_up_to_the_maximum_and_stop_all(tmp_path: Path, launchers) -> None:
    fake_python = tmp_path / "python"
    fake_python.write_text(
        "#!/bin/sh\n"
        'echo "$@ $TERRACE_RUNNER_ORGANIZATION $TERRACE_RUNNER_ENROLLMENT_CODE $TERRACE_RUNNER_TOKEN '
        '$TERRACE_RUNNER_RETIRE_AT" '
        f">> {tmp_path}/argv\nexec sleep 30\n"
    )
    fake_python.chmod(fake_python.stat().st_mode | stat.S_IEXEC)
    launcher = launchers(str(fake_python), 2)
    assert launcher.launch([credential("a", 1), credential("b", 1), credential("b", 2)]) == {
        "at-a-1": None,
        "at-b-1": None,
    }
    assert launcher.launch([credential("a", 2)]) == {}
    assert Counter(r.organization for r in launcher.live()) == {"a": 1, "b": 1}
    assert {r.token_id for r in launcher.live()} == {"at-a-1", "at-b-1"}
    assert _wait_lines(tmp_path / "argv", 2) == [
        "-m terrace.runner a secret-a-1  1234",  # the code, no token
        "-m terrace.runner b secret-b-1  1234",
    ]
    launcher.stop_all(timeout_s=5)
    assert launcher.live_count() == 0


def test_retire_stops_runners_of_one_organization(tmp_path: Path, launchers) -> None:
    script = tmp_path / "python"
    script.write_text("#!/bin/sh\nexec sleep 30\n")
    script.chmod(0o755)
    launcher = launchers(str(script), 3)
    launcher.launch([credential("a", 1), credential("a", 2), credential("b", 1)])
    assert launcher.retire("a", 1) == 1
    deadline = time.monotonic() + WAIT_S
    while len(launcher.live()) > 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert Counter(r.organization for r in launcher.live()) == {"a": 1, "b": 1}


def test_exited_runners_are_reaped(launchers) -> None:
    # A real runner with a code but no API URL exits at once (exit code 2, clear message).
    launcher = launchers(sys.executable, 3)
    assert len(launcher.launch([credential("a", 1)])) == 1
    deadline = time.monotonic() + WAIT_S
    while launcher.live_count() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert launcher.live_count() == 0
    assert len(launcher.launch([credential("a", n) for n in range(3)])) == 3
    assert [r.runner_id for r in launcher.started][-3:] == ["runner-a-0", "runner-a-1", "runner-a-2"]


def test_a_killed_runners_work_folder_is_removed_and_an_earlier_servers_leftovers_at_start(tmp_path: Path) -> None:
    """A runner SIGKILLed mid-job cannot remove its job folders; the launcher removes its folder once it exited, and
    a new launcher (a restarted server) removes what the runners of the previous one left (issue 30's kill proof)."""
    work = tmp_path / "runner-work"
    (work / "at-old-1" / "plan-run-x-abcd").mkdir(parents=True)  # a runner of the killed server left its job
    fake_python = tmp_path / "python"
    fake_python.write_text('#!/bin/sh\nmkdir -p "$TERRACE_WORK_DIR/apply-job-1234"\necho up > "$TERRACE_WORK_DIR/up"\n'
                           "exec sleep 30\n")  # fmt: skip
    fake_python.chmod(fake_python.stat().st_mode | stat.S_IEXEC)
    launcher = LocalProcessLauncher(
        {"PATH": os.environ["PATH"], "TERRACE_WORK_DIR": str(work)}, max_processes=1, python=str(fake_python)
    )
    try:
        assert list(work.iterdir()) == []
        launcher.launch([credential("a", 1)])
        own = work / "at-a-1"
        deadline = time.monotonic() + WAIT_S
        while not (own / "up").exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert (own / "apply-job-1234").is_dir()

        launcher.runners[0].process.kill()  # SIGKILL mid-job
        launcher.runners[0].process.wait()
        assert launcher.live_count() == 0

        assert not own.exists()
    finally:
        launcher.stop_all(timeout_s=10)
