"""The kill proof's apply counter (`kill_run_client.ApplyCounter`) counts the applies of every job uid.

As root the runner runs each job as a uid of its own with umask 077 (`runner/sandbox.py`). The counter's file was
once created by the first apply, mode 0600, so every later job of another uid failed its provisioner with
"Permission denied" and its run ended `errored` by itself: the kill proof counted those as runs a kill had errored
(5 of 10 on moto, and the runner kills' "errored right after the kill").
"""

from __future__ import annotations

import shutil
import subprocess

import pytest
from job_uids import job_uids_in_use
from kill_run_client import ApplyCounter

pytestmark = [pytest.mark.proof]

UIDS = (64990, 64991)  # two job-like uids (no account needed)


@pytest.mark.skipif(not job_uids_in_use(), reason="jobs run as the test's own uid unless root with setpriv")
def test_two_job_uids_each_append_to_the_counter() -> None:
    counter = ApplyCounter()
    try:
        for uid in UIDS:
            line = f"umask 077; echo start m{uid} >> {counter.file}; echo done m{uid} >> {counter.file}"
            wrapped = ["setpriv", "--reuid", str(uid), "--regid", str(uid), "--clear-groups", "sh", "-c", line]
            ran = subprocess.run(wrapped, capture_output=True, text=True, timeout=30, check=False)
            assert ran.returncode == 0, ran.stderr
        assert [(counter.starts(f"m{uid}"), counter.done(f"m{uid}")) for uid in UIDS] == [(1, 1), (1, 1)]
    finally:
        shutil.rmtree(counter.root, ignore_errors=True)
