"""Whether the machine `terrace dev` runs on can reach the terraform release mirror. A dev stack on a machine that
cannot (no route to the vendor's release site, no mirror set) runs every workspace on the versions its runners hold,
as it says at start, instead of letting each run wait for downloads that cannot come; `TERRACE_TOOL_DOWNLOADS` set
either way decides without asking."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import httpx

from terrace.services.admin.tool_releases import DEFAULT_MIRRORS

PROBE_TIMEOUT_S = 3.0


def mirror_reachable(url: str) -> bool:
    """Any HTTP answer from `url` (a mirror's base) means it can be reached; no connection within the timeout means
    it cannot."""
    try:
        httpx.head(url, timeout=PROBE_TIMEOUT_S, follow_redirects=False)
    except httpx.HTTPError:
        return False
    return True


def dev_tool_downloads(env: Mapping[str, str], reachable: Callable[[str], bool] = mirror_reachable) -> tuple[bool, str]:
    """Whether the dev stack's runners fetch the versions they lack, and the mirror that cannot be reached ("" when
    none was found so): `TERRACE_TOOL_DOWNLOADS` when set (the dev stack's settings are its own, not read from the
    environment), else whether the terraform mirror answers."""
    decided = env.get("TERRACE_TOOL_DOWNLOADS", "").strip().lower()
    if decided:
        return decided in ("1", "true", "yes", "on"), ""
    mirror = env.get("TERRACE_TOOL_MIRROR_TERRAFORM") or DEFAULT_MIRRORS["terraform"]
    return (True, "") if reachable(mirror) else (False, mirror)
