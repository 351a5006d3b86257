"""The module versions a plan job's `terraform init` installed, for its finish report (`FinishRequest.
installed_modules`): the explorer's exact versions of the module calls, where the configuration gives a constraint.

Read right after init, before the plan runs the configuration's code: `.terraform/modules/modules.json` in the
job's working directory, copied out through `JobFolder.copy_from_job` (a regular file of the job's own with one
link, reached through no link, within the job's folder and `MANIFEST_MAX_BYTES`), then parsed as plain JSON and
kept within the server's limits by `domain/installed_modules.py`. A job that has none, or one the runner refuses
to read, reports an empty list: it never fails the job.
"""

from __future__ import annotations

import logging

from terrace.domain.installed_modules import MANIFEST_MAX_BYTES, InstalledModule, from_manifest
from terrace.runner.job_folder import UnsafeJobFile
from terrace.runner.job_setup import Job

log = logging.getLogger("terrace.runner.installed_modules")
MODULES_JSON = ".terraform/modules/modules.json"
COPY_NAME = "installed-modules.json"  # the runner's copy, in its own folder


def read(job: Job) -> list[InstalledModule]:
    """The modules `job`'s init installed, as its finish report carries them."""
    try:
        copy = job.folder.copy_from_job(job.cwd / MODULES_JSON, COPY_NAME, MANIFEST_MAX_BYTES)
        try:
            return from_manifest(copy.read_bytes())
        finally:
            copy.unlink(missing_ok=True)
    except UnsafeJobFile as exc:
        log.info("installed modules not read: %s", exc)
    except OSError as exc:
        log.info("installed modules not read: %s", exc.strerror)
    return []
