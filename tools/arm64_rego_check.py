"""`make arm64-rego-check`: regopy compiles and evaluates current Rego on arm64 (the Lambda's architecture), on an
x86_64 machine, through Terrace's own policy engine adapter.

1. An aarch64 sysroot from Debian bookworm's arm64 packages (Python 3.11 and the C/C++ runtime libraries; a private
   apt state under the work folder, so the machine's apt configuration is not touched), unpacked with `dpkg -x`.
2. regopy's manylinux_2_34 aarch64 wheels from PyPI (`pip download`): the cp311 one, for the sysroot's interpreter,
   and the cp312 one, the build the Lambda layer ships (`infra/settings.py`: Python 3.12). regopy binds rego-cpp
   through ctypes and its library links no libpython, so both run under the sysroot's Python 3.11.
3. `RegoPolicyEngine` (`adapters/rego_policy_engine.py`), its child `terrace.adapters.rego_child` run (through
   `adapters/tenant_process.py`) by the arm64
   Python under `qemu-aarch64(-static) -L <sysroot>`: a deny with messages (`import rego.v1`, `contains`, `if`),
   an allow, a syntax error.

Needs qemu user emulation (`apt-get install qemu-user-static`), apt-get and dpkg. Downloads at run time into
`.build/arm64-rego/` (reused by the next run). Pinned: regopy 1.5.2, Debian bookworm (set
TERRACE_ARM64_DEBIAN_MIRROR to a snapshot.debian.org archive URL to pin every package to a date).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "layers"))

from terrace.adapters import tenant_identity  # noqa: E402 - this checkout's package
from terrace.adapters.rego_policy_engine import RegoPolicyEngine  # noqa: E402 - this checkout's package

REGOPY = "1.5.2"
SUITE = "bookworm"
PACKAGES = (
    "python3.11-minimal", "libpython3.11-minimal", "libpython3.11-stdlib", "libc6", "libstdc++6", "libgcc-s1",
    "libatomic1", "zlib1g", "libexpat1", "libffi8", "libssl3",
)  # fmt: skip
WORK = REPO / ".build" / "arm64-rego"
KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"

POLICY = """package terraform.policies.arm64
import rego.v1

deny contains msg if {
    some rc in input.plan.resource_changes
    rc.type == "null_resource"
    "create" in rc.change.actions
    msg := sprintf("%s may not be created in %s", [rc.address, input.run.workspace.name])
}
"""
QUERY = "data.terraform.policies.arm64.deny"


def _input(resource_type: str) -> dict[str, object]:
    change = {"address": f"{resource_type}.a", "type": resource_type, "change": {"actions": ["create"]}}
    return {"plan": {"resource_changes": [change]}, "run": {"workspace": {"name": "app"}}}


def say(text: str) -> None:
    print(text, flush=True)


def run(*args: str, **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, check=True, text=True, capture_output=True, **kwargs)  # type: ignore[call-overload]


def emulator() -> str:
    for name in ("qemu-aarch64-static", "qemu-aarch64"):
        if found := shutil.which(name):
            return found
    sys.exit("arm64-rego-check: no qemu-aarch64-static or qemu-aarch64 on PATH (apt-get install qemu-user-static)")


def sysroot() -> tuple[Path, list[str]]:
    """The unpacked arm64 packages, and the name_version of each."""
    root, debs = WORK / "sysroot", WORK / "debs"
    apt_dir = WORK / "apt"
    mirror = os.environ.get("TERRACE_ARM64_DEBIAN_MIRROR", "http://deb.debian.org/debian")
    security = os.environ.get("TERRACE_ARM64_DEBIAN_SECURITY", "http://deb.debian.org/debian-security")
    if not (root / "usr" / "bin" / "python3.11").exists():
        for folder in (apt_dir / "lists" / "partial", apt_dir / "archives" / "partial", apt_dir / "etc", debs):
            folder.mkdir(parents=True, exist_ok=True)
        (apt_dir / "status").touch()
        (apt_dir / "etc" / "sources.list").write_text(
            f"deb [arch=arm64 signed-by={KEYRING}] {mirror} {SUITE} main\n"
            f"deb [arch=arm64 signed-by={KEYRING}] {security} {SUITE}-security main\n"
        )
        apt = [
            "apt-get", "-q", "-o", f"Dir::State={apt_dir}", "-o", f"Dir::State::status={apt_dir / 'status'}",
            "-o", f"Dir::State::Lists={apt_dir / 'lists'}", "-o", f"Dir::Cache={apt_dir}",
            "-o", f"Dir::Cache::archives={apt_dir / 'archives'}", "-o", f"Dir::Etc={apt_dir / 'etc'}",
            "-o", f"Dir::Etc::sourcelist={apt_dir / 'etc' / 'sources.list'}",
            "-o", f"Dir::Etc::sourceparts={apt_dir / 'etc'}", "-o", f"Dir::Etc::parts={apt_dir / 'etc'}",
            "-o", f"Dir::Etc::preferencesparts={apt_dir / 'etc'}", "-o", "APT::Architecture=arm64",
            "-o", "APT::Architectures::=arm64", "-o", "Debug::NoLocking=1", "-o", "APT::Sandbox::User=root",
        ]  # fmt: skip
        say(f"arm64 packages: {SUITE} from {mirror}")
        run(*apt, "update")
        run(*apt, "download", *PACKAGES, cwd=debs)
        for deb in sorted(debs.glob("*.deb")):
            run("dpkg", "-x", str(deb), str(root))
    versions = sorted(p.name.removesuffix("_arm64.deb") for p in debs.glob("*.deb"))
    return root, versions


def wheel(python: str) -> tuple[Path, str]:
    """regopy's aarch64 wheel for `python` (3.11, 3.12), unpacked; and its file name."""
    tag = python.replace(".", "")
    target, site = WORK / f"wheel-cp{tag}", WORK / f"site-cp{tag}"
    target.mkdir(parents=True, exist_ok=True)
    if not list(target.glob("*.whl")):
        run(sys.executable, "-m", "pip", "download", "-q", "--disable-pip-version-check", "--platform",
            "manylinux_2_34_aarch64", "--only-binary=:all:", "--no-deps", "--python-version", python,
            "-d", str(target), f"regopy=={REGOPY}")  # fmt: skip
    [found] = target.glob("*.whl")
    if not site.exists():
        with zipfile.ZipFile(found) as archive:
            archive.extractall(site)
    return site, found.name


def needed(library: Path) -> list[str]:
    if not shutil.which("readelf"):
        return ["(readelf not found)"]
    lines = run("readelf", "-d", str(library)).stdout.splitlines()
    return [line.split("[", 1)[1].rstrip("]") for line in lines if "(NEEDED)" in line]


def check(qemu: str, root: Path, site: Path) -> dict[str, object]:
    python = [qemu, "-L", str(root), str(root / "usr" / "bin" / "python3.11")]
    machine = run(*python, "-c", "import platform; print(platform.machine())").stdout.strip()
    path = f"{site}{os.pathsep}{REPO / 'layers'}"  # the child's PYTHONPATH: regopy, then Terrace
    # the emulator is slow, and the resident memory watched is qemu's (1.6 GiB here for what takes 15 MiB natively)
    # as on the Lambda, the child keeps this process's uid: an emulated interpreter takes no seccomp filter of the
    # host's, which a child with a uid of its own must have (`adapters/tenant_process.py: enter`)
    tenant_identity._switch = False
    engine = RegoPolicyEngine(timeout_s=180, cpu_s=180, memory_bytes=4 << 30, python=python, path=path)
    modules = {"arm64.rego": POLICY}
    denied = engine.evaluate(modules, [QUERY], _input("null_resource"))
    allowed = engine.evaluate(modules, [QUERY], _input("aws_s3_bucket"))
    broken = engine.check({"broken.rego": "package broken\nimport rego.v1\ndeny contains msg if {\n"})
    results = {
        "machine": machine,
        "deny": denied.error or [r.value for r in denied.results],
        "allow": allowed.error or [r.value for r in allowed.results],
        "syntax_error": (broken or "").splitlines()[:3],
    }
    ok = (
        machine == "aarch64"
        and results["deny"] == [["null_resource.a may not be created in app"]]
        and results["allow"] == [[]]
        and bool(broken)
    )
    return {**results, "ok": ok}


def main() -> int:
    qemu = emulator()
    root, versions = sysroot()
    say(f"sysroot: {root}\n  " + "\n  ".join(versions))
    say(f"emulator: {run(qemu, '--version').stdout.splitlines()[0]}")
    ok = True
    for python in ("3.11", "3.12"):
        site, name = wheel(python)
        say(f"\n{name}")
        say(f"  librego_shared.so needs: {', '.join(needed(site / 'regopy' / 'librego_shared.so'))}")
        outcome = check(qemu, root, site)
        say("  " + json.dumps(outcome))
        ok = ok and bool(outcome["ok"])
    say("\narm64-rego-check: " + ("passed" if ok else "FAILED"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
