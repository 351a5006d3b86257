"""The Fargate runner image's size (`python -m bench.runner_image`): what each task pulls before its first job.

With a Docker daemon it builds `runner-container/Dockerfile` for linux/arm64 and reads the image's size
(`docker image inspect`). Without one (the usual case here: `make test` never needs Docker) it measures what it can
and says so: the installed size of the runner's Python layer (the terrace package and every distribution of
runner-container/requirements.txt, as installed in this virtual environment, files and bytecode) and its gzip size
(the layer as a registry stores it), and adds the parts it cannot measure here (the base image, the apt packages,
the two tool binaries) at the estimates of docs/performance.md, each marked as such.
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import shutil
import subprocess
import sys
import tarfile
from importlib import metadata
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
MB = 1024 * 1024
# (part, on disk, compressed) in MB: estimates from docs/performance.md, for what cannot be measured without Docker
ESTIMATED = [
    ("python:3.11-slim-bookworm (arm64)", 130, 45),
    ("git, openssh-client, procps", 80, 28),
    ("OpenTofu 1.9.0 (tofu)", 55, 22),
    ("Terraform 1.9.8 (terraform)", 85, 24),
]
BEFORE = (470, 155)  # the image before the runner's own venv: the API's libraries and curl in it too


def docker_available() -> bool:
    docker = shutil.which("docker")
    if docker is None:
        return False
    return subprocess.run([docker, "info"], capture_output=True, timeout=30, check=False).returncode == 0


def built_size(tag: str = "terrace-runner:bench") -> dict[str, Any]:
    build = ["docker", "build", "--platform", "linux/arm64", "-f", "runner-container/Dockerfile", "-t", tag, "."]
    subprocess.run(build, cwd=REPO, check=True)
    (image,) = json.loads(subprocess.check_output(["docker", "image", "inspect", tag]))
    return {"how": "docker build + docker image inspect", "on_disk_mb": round(image["Size"] / MB, 1)}


def runner_distributions() -> list[str]:
    lines = (REPO / "runner-container" / "requirements.txt").read_text().splitlines()
    return [line.split("==")[0] for line in lines if line and not line.startswith("#")]


def python_layer() -> tuple[int, int, list[str]]:
    """Bytes on disk and gzip-compressed of the runner's venv contents as installed here, and what was missing."""
    files: list[Path] = [p for p in (REPO / "layers" / "terrace").rglob("*") if p.is_file()]
    missing = []
    for name in runner_distributions():
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            missing.append(name)
            continue
        files += [Path(str(dist.locate_file(f))) for f in dist.files or []]
    files = [f for f in dict.fromkeys(files) if f.is_file()]
    raw = sum(f.stat().st_size for f in files)
    buffer = io.BytesIO()
    with (
        gzip.GzipFile(fileobj=buffer, mode="wb", compresslevel=6) as zipped,
        tarfile.open(fileobj=zipped, mode="w") as tar,
    ):
        for f in files:
            tar.add(f, arcname=str(f).lstrip("/"), recursive=False)
    return raw, buffer.tell(), missing


def estimate() -> dict[str, Any]:
    raw, packed, missing = python_layer()
    parts = [(name, disk, packed_mb, "estimate") for name, disk, packed_mb in ESTIMATED]
    parts.append(("the runner's Python layer", round(raw / MB, 1), round(packed / MB, 1), "measured"))
    return {
        "how": "no Docker daemon: the Python layer measured from this venv (gzip -6 of its files), the rest estimated",
        "parts": parts,
        "on_disk_mb": round(sum(p[1] for p in parts), 1),
        "compressed_mb": round(sum(p[2] for p in parts), 1),
        "missing_distributions": missing,
    }


def render(result: dict[str, Any]) -> str:
    out = [f"Runner image (runner-container/Dockerfile, linux/arm64): {result['how']}"]
    for name, disk, packed, kind in result.get("parts", []):
        out.append(f"  {name:<36} {disk:>7.1f} MB on disk {packed:>7.1f} MB compressed  ({kind})")
    total = f"{result['on_disk_mb']:.1f} MB on disk"
    if "compressed_mb" in result:
        total += f", {result['compressed_mb']:.1f} MB compressed (pulled)"
    out.append(f"  total: {total}; before the slim image: ~{BEFORE[0]} MB on disk, ~{BEFORE[1]} MB compressed")
    if result.get("missing_distributions"):
        out.append("  not installed here (left out): " + ", ".join(result["missing_distributions"]))
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.runner_image", description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--build", action="store_true", help="build the image when a Docker daemon answers")
    args = parser.parse_args(argv)
    result = built_size() if args.build and docker_available() else estimate()
    print(render(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
