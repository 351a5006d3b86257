"""The runner's CLI configuration: the provider mirror serves what it holds, every other provider installs
from its registry (none is excluded from direct installation)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from terrace.local.terraform_config import (
    mirrored_providers,
    null_provider_source,
    render_provider_installation,
    write_provider_mirror,
)


def test_the_mirror_includes_and_direct_excludes_exactly_what_it_holds(tmp_path: Path) -> None:
    for provider in ("registry.terraform.io/hashicorp/null/2.1.2", "registry.opentofu.org/acme/thing/0.1.0"):
        (tmp_path / provider / "linux_amd64").mkdir(parents=True)
    held = ["registry.opentofu.org/acme/thing", "registry.terraform.io/hashicorp/null"]
    assert mirrored_providers(tmp_path) == held
    config = render_provider_installation(tmp_path)
    listed = '"registry.opentofu.org/acme/thing", "registry.terraform.io/hashicorp/null"'
    assert f"include = [{listed}]" in config and f"exclude = [{listed}]" in config
    assert "hashicorp/*" not in config
    assert render_provider_installation(tmp_path / "empty") == "provider_installation {\n  direct {}\n}\n"


TERRAFORM = Path(sys.prefix) / "bin" / "terraform"


@pytest.mark.skipif(not TERRAFORM.exists() or null_provider_source() is None, reason="needs the venv's terraform 1.0.3")
def test_terraform_installs_mirrored_null_and_looks_up_random_in_its_registry(tmp_path: Path) -> None:
    mirror = write_provider_mirror(tmp_path / "providers")
    rc = tmp_path / "terraform.rc"
    rc.write_text(render_provider_installation(mirror.resolve()))
    work = tmp_path / "work"
    work.mkdir()
    (work / "main.tf").write_text(
        'terraform {\n  required_providers {\n    null = { source = "hashicorp/null" }\n'
        '    random = { source = "hashicorp/random" }\n  }\n}\n'
    )
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path),
        "TF_CLI_CONFIG_FILE": str(rc),
        "CHECKPOINT_DISABLE": "1",
        "HTTPS_PROXY": "http://127.0.0.1:9",  # no network in tests: the registry lookup fails fast
    }
    done = subprocess.run(
        [str(TERRAFORM), "init", "-input=false", "-no-color"], cwd=work, env=env, capture_output=True, timeout=300
    )
    out = done.stdout.decode() + done.stderr.decode()
    assert "Installing hashicorp/null v2.1.2" in out, out  # from the mirror
    # random was looked up in its registry (which the test cannot reach), not refused by the configuration
    assert "could not connect to registry.terraform.io" in out, out
    assert "not found in any of the search locations" not in out, out
    shutil.rmtree(work / ".terraform", ignore_errors=True)


TOFU = Path(os.environ.get("TERRACE_TOFU_BINARY", "/work/shared/tools/opentofu/tofu"))


@pytest.mark.skipif(not TOFU.exists(), reason=f"needs OpenTofu at {TOFU} (TERRACE_TOFU_BINARY)")
@pytest.mark.skipif(null_provider_source() is None, reason="needs the venv's null provider")
def test_tofu_installs_hashicorp_null_from_the_mirror_offline(tmp_path: Path) -> None:
    """OpenTofu reads `hashicorp/null` as registry.opentofu.org/hashicorp/null: the mirror holds it there too."""
    mirror = write_provider_mirror(tmp_path / "providers")
    assert {"registry.opentofu.org/hashicorp/null", "registry.terraform.io/hashicorp/null"} <= set(
        mirrored_providers(mirror)
    )
    rc = tmp_path / "tofu.rc"
    rc.write_text(render_provider_installation(mirror.resolve()))
    work = tmp_path / "work"
    work.mkdir()
    (work / "main.tf").write_text(
        'terraform {\n  required_providers {\n    null = { source = "hashicorp/null" }\n  }\n}\n'
    )
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path),
        "TF_CLI_CONFIG_FILE": str(rc),
        "CHECKPOINT_DISABLE": "1",
        "HTTPS_PROXY": "http://127.0.0.1:9",  # offline: a registry lookup would fail
    }
    done = subprocess.run(
        [str(TOFU), "init", "-input=false", "-no-color"], cwd=work, env=env, capture_output=True, timeout=300
    )
    out = done.stdout.decode() + done.stderr.decode()
    assert done.returncode == 0, out
    assert "Installing hashicorp/null v2.1.2" in out, out
