"""The local catalog of tool binaries (`make dev`): `<state>/tools/<binary>/<version>/<binary>` links to the
terraform of the virtualenv (1.0.3), the terraform on PATH and an OpenTofu when present. An operator adds
a version by putting its binary in such a folder (kept across restarts). The virtualenv's `terraform` is a Python
script that execs the binary its package ships: runners run that binary itself (`unwrapped`), not a Python start
per command."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from terrace.domain import tool_versions as tv
from terrace.local.terraform_binary import unwrapped
from terrace.runner import catalog
from terrace.runner.commands import detect_version

REPO_ROOT = Path(__file__).resolve().parents[3]


def candidates() -> list[tuple[str, str]]:
    """(tool, path) of the binaries to look at: the virtualenv's terraform first, then those on PATH, then OpenTofu."""
    venv_terraform = Path(sys.prefix) / "bin" / "terraform"
    found = [("terraform", unwrapped(str(venv_terraform)))]
    path_without_venv = os.pathsep.join(
        p for p in os.environ.get("PATH", "").split(os.pathsep) if Path(p) != venv_terraform.parent
    )
    for tool, binary in tv.BINARY_NAMES.items():
        on_path = shutil.which(binary, path=path_without_venv)
        if on_path:
            found.append((tool, on_path))
    shared = [root / "shared" / "tools" / "opentofu" / "tofu" for root in (REPO_ROOT.parent, REPO_ROOT.parent.parent)]
    # ../shared of a checkout, ../../shared of a worktree under it (as tests/e2e/tf115_stack.py finds terraform 1.15)
    tofu = os.environ.get("TERRACE_LOCAL_TOFU") or str(next((p for p in shared if p.exists()), shared[0]))
    found.append(("opentofu", tofu))
    return found


def build(tools_dir: Path) -> catalog.Catalog:
    """Link the binaries found on this host into `tools_dir` (0755: job uids run them) and scan it."""
    tools_dir.mkdir(parents=True, exist_ok=True)
    tools_dir.chmod(0o755)
    for tool, path in candidates():
        if not os.access(path, os.X_OK):
            continue
        version = detect_version(path)
        if not tv.is_version(version):
            continue
        binary = tv.BINARY_NAMES[tool]
        folder = tools_dir / binary / version
        folder.mkdir(parents=True, exist_ok=True)
        for part in (tools_dir / binary, folder):
            part.chmod(0o755)
        link = folder / binary
        target = Path(path).resolve()
        if not link.exists() or (link.is_symlink() and link.resolve() != target):  # an earlier link: the wrapper
            link.unlink(missing_ok=True)
            link.symlink_to(target)
    return catalog.scan(tools_dir)
