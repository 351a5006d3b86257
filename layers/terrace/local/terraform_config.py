"""The terraform CLI configuration local mode hands out: credentials for the stack, offline providers.

Terraform 1.0.3 takes API tokens only from a CLI config file (TF_CLI_CONFIG_FILE). The null provider
shipped in the virtualenv comes from a filesystem mirror, so `terraform init` works with no network;
every provider the mirror does not hold installs from its registry as usual.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

from terrace.domain.registry_modules import registry_hostname

__all__ = ["registry_hostname"]  # where the local stack takes it from

NULL_PROVIDER_VERSION = "2.1.2"
NULL_PROVIDER_BINARY = f"terraform-provider-null_v{NULL_PROVIDER_VERSION}_x4"


def null_provider_source() -> Path | None:
    """Where the null provider package installed the binary: <venv>/lib/terraform-provider-null_..."""
    candidate = Path(sys.prefix) / "lib" / NULL_PROVIDER_BINARY
    return candidate if candidate.exists() else None


# terraform reads `hashicorp/null` as registry.terraform.io's, OpenTofu as registry.opentofu.org's (the same build)
MIRROR_HOSTS = ("registry.terraform.io", "registry.opentofu.org")


def write_provider_mirror(directory: Path) -> Path:
    """Lay the null provider out as <mirror>/<host>/hashicorp/null/<v>/linux_amd64/<binary> for both registries'
    hosts, so `hashicorp/null` installs offline with terraform and with OpenTofu."""
    source = null_provider_source()
    for host in MIRROR_HOSTS:
        target_dir = directory / host / "hashicorp" / "null" / NULL_PROVIDER_VERSION / "linux_amd64"
        target_dir.mkdir(parents=True, exist_ok=True)
        target = target_dir / NULL_PROVIDER_BINARY
        if source is not None and not (target.exists() and target.stat().st_size == source.stat().st_size):
            shutil.copy2(source, target)
    return directory


def mirrored_providers(mirror: Path) -> list[str]:
    """`<host>/<namespace>/<type>` of every provider the mirror holds (its unpacked layout's folders)."""
    if not mirror.is_dir():
        return []
    return sorted(
        f"{host.name}/{namespace.name}/{kind.name}"
        for host in mirror.iterdir()
        if host.is_dir()
        for namespace in host.iterdir()
        if namespace.is_dir()
        for kind in namespace.iterdir()
        if kind.is_dir()
    )


def render_provider_installation(mirror: Path | None) -> str:
    """The mirror serves exactly what it holds; every other provider installs from its registry as usual (an
    installed wheel has no mirror: everything installs from the registries)."""
    if mirror is None:
        return ""
    quoted = json.dumps  # HCL strings share JSON's quoting rules for these values
    held = ", ".join(quoted(p) for p in mirrored_providers(mirror))
    if not held:
        return "provider_installation {\n  direct {}\n}\n"
    return (
        "provider_installation {\n"
        f"  filesystem_mirror {{\n    path    = {quoted(str(mirror))}\n    include = [{held}]\n  }}\n"
        f"  direct {{\n    exclude = [{held}]\n  }}\n"
        "}\n"
    )


def render_cli_config(hostname: str, token: str, mirror: Path | None, aliases: Sequence[str] = ()) -> str:
    """Credentials for `hostname` (and each of `aliases`: other names of the same server), then the mirror."""
    quoted = json.dumps
    hosts = [hostname, *(alias for alias in aliases if alias != hostname)]
    blocks = "".join(f"credentials {quoted(host)} {{\n  token = {quoted(token)}\n}}\n\n" for host in hosts)
    return blocks + render_provider_installation(mirror)


def write_cli_config(directory: Path, hostname: str, token: str, aliases: Sequence[str] = ()) -> Path:
    """Write `terraform.rc` (0600: it holds a token) next to a provider mirror; return its path."""
    mirror = write_provider_mirror(directory / "providers") if null_provider_source() else None
    path = directory / "terraform.rc"
    path.touch(mode=0o600)
    path.write_text(render_cli_config(hostname, token, mirror.resolve() if mirror else None, aliases))
    return path


def terraform_env(cli_config: str, ca_bundle: str, home: Path) -> dict[str, str]:
    """The environment a terraform client runs with against the local stack (tests and benchmarks)."""
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "TF_CLI_CONFIG_FILE": cli_config,
        "SSL_CERT_FILE": ca_bundle,
        "CHECKPOINT_DISABLE": "1",
        "TF_IN_AUTOMATION": "1",
        "TF_INPUT": "0",
    }
