"""The embedded server's image (`server-container/Dockerfile`; no Docker needed): it installs the wheel built from
this repository with every package pinned (constraints.txt agreeing with pyproject.toml), runs `terrace serve` on
the /data volume and the exposed port, and knows the job uids the run sandbox uses."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from terrace.runner.sandbox import UID_RANGE

REPO = Path(__file__).resolve().parents[2]
FOLDER = REPO / "server-container"


def _name(requirement: str) -> str:
    return re.split(r"[=<>\[; ]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def _constraints() -> dict[str, str]:
    pins: dict[str, str] = {}
    for line in (FOLDER / "constraints.txt").read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        assert re.fullmatch(r"[a-z0-9.-]+==[A-Za-z0-9.+!-]+", line), f"not an exact pin: {line!r}"
        name, version = line.split("==")
        assert name not in pins, f"{name} pinned twice"
        pins[name] = version
    return pins


def test_constraints_pin_every_dependency_at_pyprojects_version() -> None:
    pins = _constraints()
    dependencies = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    for requirement in dependencies:
        name, version = _name(requirement), requirement.split("==")[1].split(";")[0].strip()
        assert pins.get(name) == version, f"constraints.txt pins {name} at {pins.get(name)}, pyproject at {version}"
    assert "terrace" not in pins
    for server_side in ("uvicorn", "uvloop", "httptools", "typer", "trustme", "cryptography", "starlette", "anyio"):
        assert server_side in pins  # what the server imports, directly or through FastAPI


def test_the_image_installs_the_wheel_pinned_and_serves_the_data_volume() -> None:
    dockerfile = (FOLDER / "Dockerfile").read_text()
    instructions = re.sub(r"\\\n", " ", dockerfile)  # continuation lines joined
    copy = next(line for line in instructions.splitlines() if line.startswith("COPY "))
    assert "dist/terrace-*.whl" in copy and "server-container/constraints.txt" in copy
    install = next(line for line in instructions.splitlines() if "pip install" in line)
    assert "-c /tmp/constraints.txt /tmp/terrace-*.whl" in install and "pip check" in install
    assert re.search(r"^VOLUME /data$", dockerfile, re.M) and re.search(r"^EXPOSE 8443$", dockerfile, re.M)
    assert 'ENTRYPOINT ["terrace", "serve", "--data", "/data", "--host", "0.0.0.0", "--port", "8443"]' in dockerfile
    assert f"$(seq {UID_RANGE[0]} {UID_RANGE[1]})" in dockerfile  # passwd entries for the sandbox's job uids
    assert "sha256sum -c" in dockerfile  # the tofu download is checked
