"""The embedded server's tenant children (`adapters/tenant_identity.py`: a git clone keeps the network to reach its
forge) cannot reach link-local addresses (the instance metadata 169.254.169.254, the ECS credentials endpoint)
once the server, as root with a usable iptables, set up the runner's own rule (`runner/sandbox.py`) on their uid
range at start (`local/embedded.py: guard_link_local`, `TERRACE_TENANT_BLOCK_LINK_LOCAL`: `auto` on ECS or EC2,
`true`, `false`). The real rules on a uid range of the test's own and a link-local address on the loopback, both
removed afterwards; skipped when not root or without iptables."""

from __future__ import annotations

import shutil
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from terrace.adapters import tenant_identity
from terrace.config import Settings
from terrace.local import embedded
from terrace.runner import sandbox

TEST_RANGE = (63910, 63919)  # not the server's tenant uids (62000-62999) nor the runner's: nothing else is touched
ADDRESS = "169.254.99.2"


def _settings(mode: str) -> Settings:
    return Settings(table_name="t", blob_bucket="b", tenant_block_link_local=mode)  # type: ignore[arg-type]


def _usable() -> str | None:
    """Why the rules cannot be tried here, or None."""
    if not tenant_identity.probe():
        return "tenant children get uids of their own only as root"
    if shutil.which("iptables") is None or shutil.which("ip") is None or shutil.which("bash") is None:
        return "iptables, ip or bash is not installed"
    if subprocess.run(["iptables", "-w", "5", "-S", "OUTPUT"], capture_output=True, check=False).returncode != 0:
        return "iptables is not usable here (no NET_ADMIN or no netfilter)"
    return None


needs_iptables = pytest.mark.skipif(_usable() is not None, reason=str(_usable()))


@pytest.fixture(scope="module")
def listener() -> Iterator[int]:
    """Listening on a link-local address (its port); the server's rule on the test's range in place."""
    subprocess.run(["ip", "addr", "add", f"{ADDRESS}/32", "dev", "lo"], capture_output=True, check=True)
    link = socket.create_server((ADDRESS, 0))
    try:
        assert embedded.guard_link_local(_settings("true"), {}, TEST_RANGE)
        yield link.getsockname()[1]
    finally:
        sandbox.unblock_link_local(TEST_RANGE)
        link.close()
        subprocess.run(["ip", "addr", "del", f"{ADDRESS}/32", "dev", "lo"], capture_output=True, check=False)


def _connect_as(uid: int, port: int) -> subprocess.CompletedProcess[str]:
    script = f"exec 3<>/dev/tcp/{ADDRESS}/{port} && echo connected"
    argv = ["setpriv", "--reuid", str(uid), "--regid", str(uid), "--clear-groups", "--", "bash", "-c", script]
    return subprocess.run(argv, capture_output=True, text=True, timeout=20, check=False)


@needs_iptables
def test_a_tenant_uid_cannot_connect_to_a_link_local_address_while_the_server_can(listener: int) -> None:
    refused = _connect_as(TEST_RANGE[0], listener)
    assert refused.returncode != 0 and "refused" in refused.stderr.lower()
    assert _connect_as(TEST_RANGE[-1] + 1, listener).stdout.strip() == "connected"  # another uid: open
    with socket.create_connection((ADDRESS, listener), timeout=5):  # the server's own uid
        pass
    listed = subprocess.run(["iptables", "-w", "5", "-S", "OUTPUT"], capture_output=True, text=True, check=True)
    rules = [line for line in listed.stdout.splitlines() if f"{TEST_RANGE[0]}-{TEST_RANGE[1]}" in line]
    assert len(rules) == 1 and "169.254.0.0/16" in rules[0] and "REJECT" in rules[0]


@pytest.mark.parametrize(
    ("mode", "env", "ec2", "tried"),
    [
        ("auto", {"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI": "/v2/credentials/x"}, False, True),  # ECS
        ("auto", {}, True, True),  # an EC2 host: its instance metadata
        ("auto", {}, False, False),  # a developer's machine, a test host: no rule left behind
        ("true", {}, False, True),
        ("false", {"ECS_CONTAINER_METADATA_URI_V4": "http://169.254.170.2/v4/x"}, True, False),
    ],
)
def test_the_server_blocks_on_ecs_or_ec2_or_when_told(
    monkeypatch: pytest.MonkeyPatch, mode: str, env: dict[str, str], ec2: bool, tried: bool
) -> None:
    calls: list[tuple[int, int]] = []
    monkeypatch.setattr(tenant_identity, "probe", lambda: True)
    monkeypatch.setattr(sandbox, "_caps", sandbox.Capabilities(switch_uid=True, namespace_prefix=()))
    monkeypatch.setattr(sandbox, "on_ec2", lambda: ec2)
    monkeypatch.setattr(sandbox, "block_link_local", lambda uid_range: calls.append(uid_range) or True)
    assert embedded.guard_link_local(_settings(mode), env) is tried
    assert calls == ([tenant_identity.UID_RANGE] if tried else [])


def test_a_server_that_cannot_switch_uids_adds_no_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tenant_identity, "probe", lambda: False)
    monkeypatch.setattr(sandbox, "block_link_local", lambda uid_range: pytest.fail("no rule without uids to match"))
    assert embedded.guard_link_local(_settings("true"), {}) is False


def test_an_ec2_host_is_known_by_its_firmware(tmp_path: Path) -> None:
    tag, vendor = tmp_path / "board_asset_tag", tmp_path / "sys_vendor"
    marks = ((str(tag), "i-"), (str(vendor), "Amazon EC2"), (str(tmp_path / "absent"), "ec2"))
    assert not sandbox.on_ec2(marks)
    vendor.write_text("QEMU\n")
    assert not sandbox.on_ec2(marks)
    tag.write_text("i-0123456789abcdef0\n")
    assert sandbox.on_ec2(marks)
