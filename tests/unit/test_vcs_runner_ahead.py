"""A VCS-driven run's runner starts when the delivery decided the run, before the forge's archive is read
(`services/vcs/ingress.py: expect_runner`): on AWS the Fargate task's placement and pull overlap the download, the
archive's upload and the run's creation, as a CLI run's overlap its upload. A delivery that starts no run (an other
branch, `[ci skip]`, queue-all-runs off) starts no runner."""

from __future__ import annotations

from typing import Any

import pytest
from run_helpers import RunEnv
from terrace.adapters.memory_forge import MemoryForge
from test_vcs_deliveries import FILES, REPO, _deliver, _pr, _push, _runs, _setup, _work


def _record(env: RunEnv, monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """What happens, in order: the scaler's invocations (AWS: async Lambda invokes) and the archive's reads."""
    seen: list[Any] = []
    env.container.scaler_kick = lambda **kwargs: seen.append(kwargs)
    files = env.container.commit_files
    read = files.read
    monkeypatch.setattr(files, "read", lambda *args: seen.append("archive read") or read(*args))
    return seen


def _setup_recorded(monkeypatch: pytest.MonkeyPatch, **attributes: Any) -> tuple[RunEnv, MemoryForge, list[Any]]:
    env, forge, _ = _setup(**attributes)
    forge.push(REPO, "main", FILES)
    return env, forge, _record(env, monkeypatch)


def test_a_push_s_runner_is_started_before_the_archive_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    env, forge, seen = _setup_recorded(monkeypatch)
    _deliver(env, forge, "push", _push(forge, {**FILES, "main.tf": b"# changed\n"}), "d-1")
    _work(env)
    assert len(_runs(env)) == 1
    assert seen[:2] == [{"expect": "acme", "speculative": False}, "archive read"], seen


def test_a_pull_request_s_speculative_runner_is_started_before_the_archive_is_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    env, forge, seen = _setup_recorded(monkeypatch)
    head = forge.push(REPO, "feature", {**FILES, "main.tf": b"# one\n"})
    forge.repositories[REPO].pulls[7] = ["main.tf"]
    _deliver(env, forge, "pull_request", _pr(forge, head), "d-1")
    _work(env)
    assert len(_runs(env)) == 1
    assert seen[:2] == [{"expect": "acme", "speculative": True}, "archive read"], seen


def test_a_delivery_that_starts_no_run_starts_no_runner(monkeypatch: pytest.MonkeyPatch) -> None:
    env, forge, seen = _setup_recorded(monkeypatch, **{"queue-all-runs": False})
    _deliver(env, forge, "push", _push(forge, {**FILES, "main.tf": b"# one\n"}, message="x [ci skip]"), "d-1")
    _deliver(env, forge, "push", _push(forge, {**FILES, "main.tf": b"# two\n"}, ref="feature"), "d-2")
    _deliver(env, forge, "push", _push(forge, {**FILES, "main.tf": b"# three\n"}), "d-3")  # queue-all-runs off
    _work(env)
    assert _runs(env) == [] and not [s for s in seen if isinstance(s, dict) and "expect" in s], seen
