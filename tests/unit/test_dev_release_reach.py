"""`terrace dev` on a machine that cannot reach the release mirror runs on the versions it holds, unless
TERRACE_TOOL_DOWNLOADS decides; the probe itself answers over a real socket."""

from __future__ import annotations

import socket

from terrace.local.release_reach import dev_tool_downloads, mirror_reachable


def test_an_unreachable_mirror_turns_downloads_off_unless_the_setting_decides() -> None:
    asked: list[str] = []

    def unreachable(url: str) -> bool:
        asked.append(url)
        return False

    assert dev_tool_downloads({}, unreachable) == (False, "https://releases.hashicorp.com")
    mirror = {"TERRACE_TOOL_MIRROR_TERRAFORM": "https://mirror.test"}
    assert dev_tool_downloads(mirror, unreachable) == (False, "https://mirror.test")
    assert dev_tool_downloads({"TERRACE_TOOL_DOWNLOADS": "true"}, unreachable) == (True, "")
    assert dev_tool_downloads({"TERRACE_TOOL_DOWNLOADS": "false"}, unreachable) == (False, "")
    assert dev_tool_downloads({}, lambda url: True) == (True, "")
    assert asked == ["https://releases.hashicorp.com", "https://mirror.test"]


def test_a_port_nobody_listens_on_is_not_reachable() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound, never listening: a connection is refused
        assert mirror_reachable(f"http://127.0.0.1:{port}") is False
