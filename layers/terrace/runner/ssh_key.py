"""The workspace's SSH key for `terraform init` (git::ssh:// module sources): a file of the job, never the runner's.

The key is written 0600 into `<job folder>/ssh/` (handed to the job uid before init: `JobFolder.hand_over`),
`GIT_SSH_COMMAND` points git's ssh at it for the init child only, and the folder is removed as soon as init ends
(and with the job dir in any case). Host keys: `StrictHostKeyChecking=accept-new` with a known_hosts file of the
job: the first connection of a job trusts the host key it is shown (as TFC's runners do) and a changed key within
the job is refused; no host key outlives the job. ssh needs a passwd entry for the uid it runs as: the runner image
defines the job uid range (`runner-container/Dockerfile`).
"""

from __future__ import annotations

import os
import pwd
import shlex
import shutil
from pathlib import Path

FOLDER = "ssh"
KEY_FILE = "id_workspace"


def install(run_dir: Path, private_key: str) -> dict[str, str]:
    """Writes the key and returns the environment that makes git use it (added to the init child's env)."""
    folder = run_dir / FOLDER
    folder.mkdir(mode=0o700)
    key = folder / KEY_FILE
    fd = os.open(key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(private_key if private_key.endswith("\n") else private_key + "\n")  # ssh wants the final newline
    known_hosts = folder / "known_hosts"
    known_hosts.touch(mode=0o600)
    command = [
        "ssh",
        "-i",
        str(key),
        "-o",
        "IdentitiesOnly=yes",
        "-o",
        "StrictHostKeyChecking=accept-new",
        "-o",
        f"UserKnownHostsFile={known_hosts}",
        "-o",
        "BatchMode=yes",
    ]
    return {"GIT_SSH_COMMAND": shlex.join(command)}


def remove(run_dir: Path) -> None:
    """The key is gone once init ended: plan and apply children never see it."""
    shutil.rmtree(run_dir / FOLDER, ignore_errors=True)


def usable_by(uid: int | None) -> bool:
    """Whether ssh can run as `uid` (None: the runner's own): OpenSSH exits when the uid has no passwd entry."""
    try:
        pwd.getpwuid(os.getuid() if uid is None else uid)
    except KeyError:
        return False
    return True
