"""`<state dir>/dev.json`: what a running local server tells its clients (url, token, CA bundle, pid, and the
TERRACE_* environment under which the admin commands reach its data)."""

from __future__ import annotations

import json
import os
from pathlib import Path

DEV_FILE = "dev.json"


def read_dev_env(state_dir: Path | str = ".terrace") -> dict[str, str]:
    """TERRACE_* variables of the running dev stack (from its dev.json), or {} when there is none."""
    path = Path(state_dir) / DEV_FILE
    if not path.exists():
        return {}
    env = json.loads(path.read_text()).get("env")
    return dict(env) if isinstance(env, dict) else {}


def dev_stack_running(state_dir: Path | str = ".terrace") -> bool:
    """Whether the process that wrote dev.json is still alive (a stale file names a dead pid)."""
    path = Path(state_dir) / DEV_FILE
    try:
        pid = int(json.loads(path.read_text()).get("pid", 0))
    except (OSError, ValueError):
        return False
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
