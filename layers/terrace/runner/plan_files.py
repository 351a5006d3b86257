"""Plan files on the runner: the MD5 a finish report names for what it uploaded, the check that an apply's
downloaded plan is the one recorded when its plan finished, and whether a held folder's plan is that file."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

from terrace.domain.jobs import JobSpec
from terrace.runner.job_setup import JobFailed


def md5_of(path: Path) -> str:
    with path.open("rb") as f:
        return hashlib.file_digest(f, "md5").hexdigest()


def check_recorded(spec: JobSpec, stored: Path) -> None:
    """JobFailed unless the downloaded plan has the MD5 and size the API recorded when the plan finished (a spec
    without a record, from a plan finished before plans were recorded, is taken as it is)."""
    if spec.plan_file_size is not None and stored.stat().st_size != spec.plan_file_size:
        raise JobFailed("the stored plan is not the plan recorded when it finished (size differs): not applied")
    if spec.plan_file_md5 is not None and md5_of(stored) != spec.plan_file_md5.lower():
        raise JobFailed("the stored plan is not the plan recorded when it finished (MD5 differs): not applied")


def same_file(stored: Path, kept: Path) -> bool:
    """True when the folder's plan file (a regular file, not a link a job left) has the stored plan's bytes."""
    try:
        fd = os.open(kept, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return False
    with os.fdopen(fd, "rb") as kept_file:
        if not stat.S_ISREG(os.fstat(fd).st_mode) or os.fstat(fd).st_size != stored.stat().st_size:
            return False
        return hashlib.file_digest(kept_file, "sha256").digest() == _digest(stored)


def _digest(path: Path) -> bytes:
    with path.open("rb") as f:
        return hashlib.file_digest(f, "sha256").digest()
