"""A run stack whose tool catalog holds terraform 1.15.9 besides the usual binaries, for the e2e files that drive
`../shared/tools/terraform-1.15/terraform` (TERRACE_TEST_TERRAFORM_115 overrides): each file starts its own, at
module scope (one stack shared by the whole session made the run slower: its files then wait on one another)."""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from conftest import BACKEND, RUN_SETTINGS, StackInfo
from job_uids import traversable
from terrace.local.stack import LocalStack

_ROOT = Path(__file__).resolve().parents[2]
_TF115 = Path("tools") / "terraform-1.15" / "terraform"
TERRAFORM_115 = Path(
    os.environ.get("TERRACE_TEST_TERRAFORM_115")
    or next((p for p in (_ROOT.parent / "shared" / _TF115, _ROOT.parent.parent / "shared" / _TF115) if p.exists()),
            _ROOT.parent / "shared" / _TF115)
)  # fmt: skip  # ../shared of the main checkout, ../../shared of a worktree
ABSENT = f"terraform 1.15 is not at {TERRAFORM_115}"


@contextmanager
def tf115_stack(organization: str) -> Iterator[StackInfo]:
    state_dir = traversable(Path(tempfile.mkdtemp(prefix=f"terrace-e2e-{organization}-")))
    folder = state_dir / "tools" / "terraform" / "1.15.9"
    folder.mkdir(parents=True)
    for part in (state_dir / "tools", state_dir / "tools" / "terraform", folder):
        part.chmod(0o755)
    (folder / "terraform").symlink_to(TERRAFORM_115.resolve())
    local = LocalStack(
        port=0,
        organization=organization,
        state_dir=state_dir,
        prefix=f"e2e-{organization}-{uuid.uuid4().hex[:8]}",
        data_dir=None if BACKEND == "moto" else state_dir / "data",
    )
    local.settings_overrides = dict(RUN_SETTINGS)
    local.start()
    try:
        assert local.info is not None
        yield StackInfo(**local.info.as_dict())
    finally:
        local.stop()
        shutil.rmtree(state_dir, ignore_errors=True)
