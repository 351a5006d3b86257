"""Job uids cannot reach link-local addresses (the ECS agent's credentials endpoint 169.254.170.2, the instance
metadata 169.254.169.254) once the runner set up its rules at start (`runner/sandbox.py: guard_link_local`); the
runner's own uid still can (it signs with the task role). The real rules, as root with a usable iptables; a uid
range of the test's own and a link-local address on the loopback, both removed afterwards."""

from __future__ import annotations

import shutil
import socket
import subprocess
from collections.abc import Iterator

import pytest
from terrace.runner import sandbox

TEST_RANGE = (63900, 63909)  # not the runner's job uids: other tests' jobs on this host are untouched
ADDRESS = "169.254.99.1"


def _usable() -> str | None:
    """Why the rules cannot be tried here, or None."""
    if not sandbox.probe().switch_uid:
        return "job uids are switched only as root with setpriv"
    if shutil.which("iptables") is None or shutil.which("ip") is None or shutil.which("bash") is None:
        return "iptables, ip or bash is not installed"
    if subprocess.run(["iptables", "-w", "5", "-S", "OUTPUT"], capture_output=True, check=False).returncode != 0:
        return "iptables is not usable here (no NET_ADMIN or no netfilter)"
    return None


needs_iptables = pytest.mark.skipif(_usable() is not None, reason=str(_usable()))


@pytest.fixture(scope="module")
def listener() -> Iterator[tuple[int, int]]:
    """Listening on a link-local address and on the loopback (ports); the rules of the test's range in place."""
    subprocess.run(["ip", "addr", "add", f"{ADDRESS}/32", "dev", "lo"], capture_output=True, check=True)
    link, loop = socket.create_server((ADDRESS, 0)), socket.create_server(("127.0.0.1", 0))
    try:
        assert sandbox.block_link_local(TEST_RANGE)
        yield link.getsockname()[1], loop.getsockname()[1]
    finally:
        sandbox.unblock_link_local(TEST_RANGE)
        link.close()
        loop.close()
        subprocess.run(["ip", "addr", "del", f"{ADDRESS}/32", "dev", "lo"], capture_output=True, check=False)


def _connect_as(uid: int, host: str, port: int) -> subprocess.CompletedProcess[str]:
    script = f"exec 3<>/dev/tcp/{host}/{port} && echo connected"
    argv = ["setpriv", "--reuid", str(uid), "--regid", str(uid), "--clear-groups", "--", "bash", "-c", script]
    return subprocess.run(argv, capture_output=True, text=True, timeout=20, check=False)


@needs_iptables
def test_a_job_uid_cannot_connect_to_a_link_local_address_while_the_runner_can(listener: tuple[int, int]) -> None:
    link_port, loop_port = listener
    refused = _connect_as(TEST_RANGE[0], ADDRESS, link_port)
    assert refused.returncode != 0 and "refused" in refused.stderr.lower()
    assert _connect_as(TEST_RANGE[-1], "127.0.0.1", loop_port).stdout.strip() == "connected"  # the rest is open
    assert _connect_as(TEST_RANGE[-1] + 1, ADDRESS, link_port).stdout.strip() == "connected"  # another uid: open
    with socket.create_connection((ADDRESS, link_port), timeout=5):  # the runner's own uid
        pass


@needs_iptables
def test_the_rules_are_added_once_and_removed_whole(listener: tuple[int, int]) -> None:
    assert sandbox.block_link_local(TEST_RANGE)  # again: already there, not doubled
    listed = subprocess.run(["iptables", "-w", "5", "-S", "OUTPUT"], capture_output=True, text=True, check=True)
    rules = [line for line in listed.stdout.splitlines() if f"{TEST_RANGE[0]}-{TEST_RANGE[1]}" in line]
    assert len(rules) == 1 and "169.254.0.0/16" in rules[0] and "REJECT" in rules[0]


@pytest.mark.parametrize(
    ("mode", "env", "tried"),
    [
        ("auto", {"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI": "/v2/credentials/x"}, True),
        ("auto", {"ECS_CONTAINER_METADATA_URI_V4": "http://169.254.170.2/v4/x"}, True),
        ("auto", {}, False),  # a developer's machine, a test host: no rule left behind
        ("true", {}, True),  # an agent on EC2 (given NET_ADMIN)
        ("false", {"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI": "/v2/credentials/x"}, False),
    ],
)
def test_the_runner_blocks_on_ecs_or_when_told(
    monkeypatch: pytest.MonkeyPatch, mode: str, env: dict[str, str], tried: bool
) -> None:
    calls: list[tuple[int, int]] = []
    monkeypatch.setattr(sandbox, "_caps", sandbox.Capabilities(switch_uid=True, namespace_prefix=()))
    monkeypatch.setattr(sandbox, "block_link_local", lambda uid_range: calls.append(uid_range) or True)
    assert sandbox.guard_link_local(mode, env) is tried
    assert calls == ([sandbox.UID_RANGE] if tried else [])


def test_a_runner_that_cannot_block_says_what_holds(monkeypatch: pytest.MonkeyPatch, caplog) -> None:
    monkeypatch.setattr(sandbox, "_caps", sandbox.Capabilities(switch_uid=True, namespace_prefix=()))
    monkeypatch.setattr(sandbox, "_iptables", lambda tool, action, rule: False)  # Fargate: no NET_ADMIN
    with caplog.at_level("WARNING", logger="terrace.runner.sandbox"):
        assert sandbox.guard_link_local("auto", {"ECS_CONTAINER_METADATA_URI_V4": "x"}) is False
    assert "relative URI" in caplog.text
