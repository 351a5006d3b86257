"""Shared by every test folder. Keep it tiny: folder-specific fixtures live in each folder's conftest."""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from job_uids import job_uids_in_use, untraversable
from longest_first import FileDurations, LongestFileFirstScheduling, group, unique_node_ids

CHECKOUT = Path(__file__).resolve().parent.parent

# boto3 needs credentials even against moto; tests never use real ones.
for _key, _value in {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
}.items():
    os.environ[_key] = _value


def pytest_configure(config: pytest.Config) -> None:
    """A checkout the runner's job uids cannot reach stops the session at once, with one line saying which
    folder to fix (else 18 tests failed with "Permission denied" running `.venv/bin/terraform`).

    Each session's temporary folders live in a base folder of its own, not in /tmp/pytest-of-<user>.

    As root the runner's terraform children run as job uids that must pass through the test's folders
    (`job_uids.traversable`), and every pytest session starting on the machine (another xdist worker, another
    checkout's `make test`) resets /tmp/pytest-of-<user> to 0700: a job then failed at random, e.g. "plugin
    reinitialization required" or an errored run, when its provider mirror or fake terraform became
    unreachable mid-test. xdist workers get their own folder under this one from the controller.
    """
    if not hasattr(config, "workerinput") and job_uids_in_use():
        blocked = untraversable(CHECKOUT)
        if blocked:
            pytest.exit(
                f"tests need {CHECKOUT}/.venv/bin/terraform reachable by the runner's job uids, but {blocked[0]} is "
                f"not traversable by other users: run `chmod o+x {blocked[0]}` or clone somewhere traversable",
                returncode=4,
            )
    if config.getoption("longest_files_first", False) and not hasattr(config, "workerinput"):
        config.pluginmanager.register(FileDurations(), "terrace-file-durations")
    if config.option.basetemp is None and not hasattr(config, "workerinput"):
        config.option.basetemp = tempfile.mkdtemp(prefix="terrace-pytest-")
        config.stash[_OWN_BASETEMP] = config.option.basetemp


# Long tests first (`make test` runs on 2 cores): xdist's `load` scheduling hands each worker its tests in
# collection order, so folders of long tests (real clients, browsers, the proof) start at once and the short
# unit tests fill the end, instead of one long test starting last while the other worker sits idle. Modules
# stay whole and keep their order (module fixtures), and each worker still runs its tests in this order: the
# e2e `stack` (moto in-process) is done with before any later test's `mock_aws` resets moto's backends.
# `make test` goes further with `--longest-files-first` (tests/longest_first.py): whole files, longest first.
def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--longest-files-first",
        action="store_true",
        help="with -n: run each test file whole on one worker, handing out the longest files first",
    )


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    if config.getoption("longest_files_first"):
        return LongestFileFirstScheduling(config, log)
    return None  # xdist's own, from --dist


def _long_first(item: pytest.Item) -> int:
    return group(item.nodeid.split("::", 1)[0])


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    unique_node_ids(items)
    items.sort(key=_long_first)  # stable: the order within each group is unchanged


def pytest_unconfigure(config: pytest.Config) -> None:
    own = config.stash.get(_OWN_BASETEMP, None)
    if own is not None:
        shutil.rmtree(own, ignore_errors=True)


_OWN_BASETEMP = pytest.StashKey[str]()


@pytest.fixture
def free_port() -> int:
    """A TCP port nobody listens on right now (for servers that cannot be handed a socket)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# leak guard ------------------------------------------------------------------------------------------------
# A test (with its function fixtures) stops every process and thread it starts; a module or session fixture
# stops its own by the end of the session. Leftovers fail the test (or the session's last test), naming them.
LEFTOVER_GRACE_S = 30  # stopped processes and threads may take a moment to go; generous under load


# Library singletons that live as long as the interpreter, by design: the CDK's jsii kernel (node).
INTERPRETER_LIFETIME = ("jsii-runtime",)


def _descendants() -> dict[int, str]:
    """Live processes under this one (zombies excluded; not the INTERPRETER_LIFETIME trees): pid -> command line.

    Walks down from this process through /proc/<pid>/task/<tid>/children (a few files per test, where reading every
    process's stat on the machine took milliseconds twice per test); the full scan where the kernel has no such files.
    """
    if not _CHILDREN_FILES:
        return _descendants_by_scan()
    found: dict[int, str] = {}
    frontier = [os.getpid()]
    while frontier:
        below: list[int] = []
        for pid in (child for parent in frontier for child in _children(parent)):
            if pid in found or _state(pid) in ("Z", "X", "?"):
                continue
            cmd = _command_line(pid)
            if not any(name in cmd for name in INTERPRETER_LIFETIME):
                found[pid] = cmd
                below.append(pid)
        frontier = below
    return found


_CHILDREN_FILES = os.path.exists(f"/proc/{os.getpid()}/task/{os.getpid()}/children")


def _children(pid: int) -> list[int]:
    """The direct children of `pid`: each of its threads lists those it started."""
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []  # gone meanwhile
    found: list[int] = []
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as children:
                found.extend(int(child) for child in children.read().split())
        except OSError:
            continue
    return found


def _state(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "?"  # gone meanwhile


def _descendants_by_scan() -> dict[int, str]:
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue  # gone meanwhile
        if fields[0] not in ("Z", "X"):
            parents[int(entry)] = int(fields[1])
    found: dict[int, str] = {}
    frontier = {os.getpid()}
    while frontier:
        children = {pid: _command_line(pid) for pid, parent in parents.items() if parent in frontier}
        frontier = {
            pid
            for pid, cmd in children.items()
            if pid not in found and not any(name in cmd for name in INTERPRETER_LIFETIME)
        }
        found.update((pid, children[pid]) for pid in frontier)
    return found


def _command_line(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
            return cmdline.read().replace(b"\0", b" ").decode(errors="replace").strip()[:200]
    except OSError:
        return "?"


def _is_runner(pid: int) -> bool:
    """A runner process of a LocalStack (or one of its terraform children): the stack fixture stops them."""
    for candidate in (pid, *_ancestors(pid)):
        try:
            with open(f"/proc/{candidate}/environ", "rb") as environ:
                found = b"\0" + environ.read()
                if b"\0TERRACE_RUNNER_TOKEN=" in found or b"\0TERRACE_RUNNER_ENROLLMENT_CODE=" in found:
                    return True
        except OSError:
            continue
    return False


def _is_shared_browser(pid: int) -> bool:
    """A process of the browser a test file shares (tests/browser/conftest.py: chromium starts its network,
    storage and GPU helpers on demand, inside the first test that needs them; the browser stops them with itself)."""
    return _command_line(pid).startswith(("/usr/lib/chromium/", "/usr/bin/chromium"))


def _ancestors(pid: int) -> list[int]:
    chain: list[int] = []
    while pid > 1 and pid != os.getpid():
        try:
            with open(f"/proc/{pid}/stat") as stat:
                pid = int(stat.read().rsplit(")", 1)[1].split()[1])
        except OSError:
            break
        chain.append(pid)
    return chain


def _threads() -> set[threading.Thread]:
    """Threads that would keep working after a test: non-daemon ones, and Terrace's own workers."""
    return {
        thread
        for thread in threading.enumerate()
        if thread is not threading.main_thread() and (not thread.daemon or thread.name.startswith("terrace-"))
    }


def _is_stack_worker(thread: threading.Thread) -> bool:
    """An events handler of a local stack (`local/workers.py`): a shared stack's worker starts its handlers just
    after the stack started, which may be inside the first test using it; or an executor thread of a shared event
    loop (the browser fixture's playwright starts them on demand, and stops them with the browser). The session's
    guard checks them at the end."""
    return thread.name.startswith(("terrace-events-", "asyncio_"))


def _uses_shared_fixtures(item: pytest.Item) -> bool:
    info = getattr(item, "_fixtureinfo", None)
    defs = info.name2fixturedefs.values() if info is not None else []
    return any(fixturedef.scope != "function" for fixturedefs in defs for fixturedef in fixturedefs)


def _wait_for_leftovers(probe: Callable[[], list[str]]) -> list[str]:
    deadline = time.monotonic() + LEFTOVER_GRACE_S
    while (left := probe()) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left


@pytest.fixture(autouse=True)
def _stops_what_it_starts(request: pytest.FixtureRequest) -> Iterator[None]:
    processes, threads = set(_descendants()), _threads()
    yield
    shared = _uses_shared_fixtures(request.node)  # a shared stack's runners start on demand during tests

    def probe() -> list[str]:
        left = [
            f"process {pid}: {cmd}"
            for pid, cmd in _descendants().items()
            if pid not in processes and not (shared and (_is_runner(pid) or _is_shared_browser(pid)))
        ]
        return left + [f"thread {t.name!r}" for t in _threads() - threads if not (shared and _is_stack_worker(t))]

    if left := _wait_for_leftovers(probe):
        pytest.fail("the test left behind:\n  " + "\n  ".join(left), pytrace=False)


@pytest.fixture(scope="session", autouse=True)
def _session_stops_what_it_starts() -> Iterator[None]:
    yield  # torn down last: every other session fixture has stopped what it started

    def probe() -> list[str]:
        left = [f"process {pid}: {cmd}" for pid, cmd in _descendants().items()]
        return left + [f"thread {t.name!r}" for t in _threads()]

    if left := _wait_for_leftovers(probe):
        pytest.fail("the session's fixtures left behind:\n  " + "\n  ".join(left), pytrace=False)
