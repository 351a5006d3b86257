"""As root the runner's terraform children run as job uids of their own: test folders they use must let
those uids pass (pytest's and mkdtemp's folders are 0700), without letting them list anything."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path


def traversable(folder: Path) -> Path:
    """`folder` and every parent we own gain o+x/g+x (pass through, not list); returns `folder`."""
    for path in [folder.resolve(), *folder.resolve().parents]:
        if path.stat().st_uid == os.geteuid():
            path.chmod(path.stat().st_mode | 0o011)
    return folder


def job_uids_in_use() -> bool:
    """As root (with setpriv) the runner runs terraform as other uids (`terrace.runner.sandbox.probe`)."""
    return os.geteuid() == 0 and shutil.which("setpriv") is not None


def untraversable(checkout: Path) -> list[Path]:
    """The folders from / down to the checkout's `.venv/bin` that other uids cannot pass through (o+x)."""
    chain = [*reversed(checkout.parents), checkout, checkout / ".venv", checkout / ".venv" / "bin"]
    return [path for path in chain if path.exists() and not path.stat().st_mode & stat.S_IXOTH]
