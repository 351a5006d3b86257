"""`adapters/tenant_process.py`, the one way the server runs tenant-supplied code: an empty environment, no
inherited descriptor, a session of its own killed as a whole, CPU, memory and wall-clock limits."""

from __future__ import annotations

import json
import os
import time

import pytest
from terrace.adapters import tenant_process
from terrace.adapters.tenant_process import Limits

PROBE = "tenant_probe"
LIMITS = Limits(cpu_s=20, memory_bytes=512 * 1024 * 1024, timeout_s=30)


def _probe(request: dict, limits: Limits = LIMITS) -> tenant_process.Outcome:
    return tenant_process.run_module(PROBE, json.dumps(request).encode(), limits)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_the_child_inherits_no_variable_and_empties_the_path_it_was_given(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TERRACE_URL_SIGNING_SECRET", "server-secret")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "role-secret")
    outcome = _probe({})
    assert outcome.returncode == 0 and outcome.stopped is None
    answer = json.loads(outcome.stdout)
    # what the interpreter needs to import the package, and the locale Python sets for itself (PEP 538)
    assert set(answer["inherited"]) - {"LC_CTYPE"} == {"PYTHONPATH"}
    assert "server-secret" not in json.dumps(answer) and "role-secret" not in json.dumps(answer)
    assert answer["environ"] == {}


def test_the_child_gets_no_descriptor_a_session_of_its_own_and_its_limits() -> None:
    read_end, write_end = os.pipe()
    os.set_inheritable(read_end, True)
    os.set_inheritable(write_end, True)
    try:
        answer = json.loads(_probe({}, Limits(cpu_s=7, memory_bytes=1 << 30, timeout_s=30)).stdout)
    finally:
        os.close(read_end)
        os.close(write_end)
    assert answer["fds"] == [0, 1, 2, 3]  # stdin, stdout, /dev/null and the listing's own
    assert answer["sid"] == answer["pgid"] == answer["pid"] != os.getsid(0)
    assert answer["cwd"] == "/"
    assert answer["cpu"] == [7, 8] and answer["core"] == [0, 0]


def test_what_the_child_leaves_running_is_killed_with_its_group() -> None:
    outcome = _probe({"do": "spawn"})  # the grandchild holds the stdout pipe: the call ends as the child exits
    assert outcome.stopped is None and outcome.returncode == 0
    grandchild = json.loads(outcome.stdout)["grandchild"]
    deadline = time.monotonic() + 10
    while _alive(grandchild) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not _alive(grandchild)


def test_a_child_past_its_wall_clock_time_is_killed_and_what_it_wrote_is_kept() -> None:
    outcome = _probe({"do": "sleep"}, Limits(cpu_s=20, memory_bytes=1 << 30, timeout_s=0.5))
    assert outcome.stopped == "time" and json.loads(outcome.stdout) == {"sleeping": True}


def test_a_child_past_its_cpu_time_is_killed() -> None:
    outcome = _probe({"do": "spin"}, Limits(cpu_s=1, memory_bytes=1 << 30, timeout_s=60))
    assert outcome.stopped == "cpu" and outcome.stdout.startswith(b'{"spinning": true}')


def test_a_child_past_its_memory_is_killed() -> None:
    outcome = _probe({"do": "grow"}, Limits(cpu_s=20, memory_bytes=128 * 1024 * 1024, timeout_s=60))
    assert outcome.stopped == "memory"


def test_a_request_larger_than_the_pipe_reaches_a_child_that_reads_it_late() -> None:
    request = b"x" * (8 * 1024 * 1024)
    outcome = tenant_process.run_module("tenant_slow_reader", request, LIMITS)
    assert outcome.stopped is None and outcome.stdout == str(len(request)).encode()


def test_a_host_program_gets_only_the_environment_it_is_given_and_its_limits(monkeypatch: pytest.MonkeyPatch) -> None:
    """`run_program` (git over a tenant's repository): only the variables passed, no stdin, stdout and stderr kept
    together, its file-size limit set, and killed past its wall-clock time."""
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "leaked")
    limits = Limits(cpu_s=5, memory_bytes=256 * 1024 * 1024, timeout_s=10)
    # (the limits land a moment after the start, as the module child's do: the shell looks until they are there)
    script = 'env; for i in $(seq 100000); do [ "$(ulimit -f)" = 2048 ] && break; done; ulimit -f; cat; echo err >&2'
    shown = tenant_process.run_program(
        ["/bin/sh", "-c", script], {"ONLY": "1"}, "/", limits, files_max_bytes=1 << 20, identity=None
    )
    lines = shown.stdout.decode().splitlines()
    assert shown.returncode == 0 and "AWS_SECRET_ACCESS_KEY=leaked" not in lines and "ONLY=1" in lines
    assert "2048" in lines and lines[-1] == "err"  # ulimit -f counts 512-byte blocks
    started = time.monotonic()
    slow = tenant_process.run_program(
        ["/bin/sleep", "30"], {}, "/", Limits(cpu_s=5, memory_bytes=1 << 28, timeout_s=0.3), identity=None
    )
    assert slow.stopped == "time" and time.monotonic() - started < 5
