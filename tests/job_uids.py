"""As root the runner's terraform children run as job uids of their own: test folders they use must let
those uids pass (pytest's and mkdtemp's folders are 0700), without letting them list anything."""

from __future__ import annotations

import os
from pathlib import Path


def traversable(folder: Path) -> Path:
    """`folder` and every parent we own gain o+x/g+x (pass through, not list); returns `folder`."""
    for path in [folder.resolve(), *folder.resolve().parents]:
        if path.stat().st_uid == os.geteuid():
            path.chmod(path.stat().st_mode | 0o011)
    return folder
