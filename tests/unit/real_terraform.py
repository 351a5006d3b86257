"""The real terraform 1.0.3 of the test clients for runner tests: its binary, the null provider from an offline
mirror, and a local backend standing in for Terrace's remote one."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

from terrace.domain.jobs import JobSpec

VENV = Path(__file__).resolve().parents[2] / ".venv"
TERRAFORM = VENV / "bin" / "terraform"
NULL_PROVIDER = VENV / "lib" / "terraform-provider-null_v2.1.2_x4"
MISSING = not (TERRAFORM.exists() and NULL_PROVIDER.exists())


def offline_null(tmp_path: Path) -> tuple[Path, Path, Callable[[JobSpec], str]]:
    """An operator CLI configuration that installs the null provider from a mirror under `tmp_path`, the state
    file a local backend writes (its folder writable by job uids) and the override that selects that backend."""
    mirror = tmp_path / "mirror"
    target = mirror / "registry.terraform.io/hashicorp/null/2.1.2/linux_amd64"
    target.mkdir(parents=True)
    shutil.copy(NULL_PROVIDER, target / NULL_PROVIDER.name)
    mirror.chmod(0o755)
    operator = tmp_path / "operator.tfrc"
    operator.write_text(
        f'provider_installation {{\n  filesystem_mirror {{\n    path = "{mirror}"\n'
        '    include = ["registry.terraform.io/hashicorp/*"]\n  }\n'
        '  direct { exclude = ["registry.terraform.io/hashicorp/*"] }\n}\n'
    )
    state = tmp_path / "state" / "terraform.tfstate"
    state.parent.mkdir()
    state.parent.chmod(0o1777)  # the stand-in for the remote backend, written by the job uid

    def local_backend(_spec: JobSpec) -> str:
        return f'terraform {{\n  backend "local" {{\n    path = "{state}"\n  }}\n}}\n'

    return operator, state, local_backend
