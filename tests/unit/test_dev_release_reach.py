"""`terrace dev` on a machine that cannot reach the release mirror runs on the versions it holds, unless
TERRACE_TOOL_DOWNLOADS decides; the probe itself answers over a real socket."""

from __future__ import annotations

import socket

from terrace.local.release_reach import mirror_reachable, offline_tools


def test_an_unreachable_mirror_turns_downloads_off_unless_the_setting_decides() -> None:
    asked: list[str] = []

    def unreachable(url: str) -> bool:
        asked.append(url)
        return False

    assert offline_tools({}, unreachable) == "https://releases.hashicorp.com"
    assert offline_tools({"TERRACE_TOOL_MIRROR_TERRAFORM": "https://mirror.test"}, unreachable) == "https://mirror.test"
    assert offline_tools({"TERRACE_TOOL_DOWNLOADS": "true"}, unreachable) is None
    assert offline_tools({"TERRACE_TOOL_DOWNLOADS": "false"}, unreachable) is None
    assert offline_tools({}, lambda url: True) is None
    assert asked == ["https://releases.hashicorp.com", "https://mirror.test"]


def test_a_port_nobody_listens_on_is_not_reachable() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound, never listening: a connection is refused
        assert mirror_reachable(f"http://127.0.0.1:{port}") is False
