"""The package installs as a wheel and serves outside the repository: `pip install <wheel>`, then
`terrace serve --data DIR` from another folder serves the API, the UI's templates and static files (htmx
included, copied in at build time) from the installed package, not from this checkout."""

from __future__ import annotations

import json
import shutil
import signal
import ssl
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

import httpx
import pytest

pytestmark = pytest.mark.e2e
REPOSITORY = Path(__file__).resolve().parents[2]
HTMX = REPOSITORY / "node_modules" / "htmx.org" / "dist" / "htmx.min.js"
VENDOR = REPOSITORY / "layers" / "terrace" / "web" / "static" / "vendor"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not HTMX.exists():
        pytest.skip("node_modules is not installed (make install)")
    VENDOR.mkdir(exist_ok=True)
    shutil.copy2(HTMX, VENDOR / HTMX.name)  # what `make wheel` does
    out = tmp_path_factory.mktemp("dist")
    build = tmp_path_factory.mktemp("build")
    source = tmp_path_factory.mktemp("source")  # a copy: setuptools leaves build/ where it builds
    shutil.copy2(REPOSITORY / "pyproject.toml", source)
    shutil.copytree(
        REPOSITORY / "layers", source / "layers", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info")
    )
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out), str(source)],
        check=True,
        env={**_clean_env(), "TMPDIR": str(build)},
        timeout=300,
    )
    (found,) = out.glob("terrace-*.whl")
    return found


def _clean_env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if not k.startswith("TERRACE_") and k != "PYTHONPATH"}


def test_an_installed_wheel_serves_outside_the_repository(wheel: Path, tmp_path: Path, free_port: int) -> None:
    venv = tmp_path / "venv"
    # without a pip of its own (ensurepip costs seconds of CPU): this run's pip installs into it (`--python`)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    install = [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps", str(wheel)]
    subprocess.run(install, check=True, timeout=300, env=_clean_env())
    # the dependencies come from this test run's environment (a path entry: its .pth files, among them the
    # checkout's editable install, are not processed), so the package itself is the installed wheel's
    site = Path(
        subprocess.check_output(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], text=True
        ).strip()
    )
    (site / "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    where = subprocess.check_output(
        [str(python), "-c", "import terrace; print(terrace.__file__)"], text=True, cwd=tmp_path
    )
    assert str(site) in where and str(REPOSITORY) not in where

    data = tmp_path / "data"
    server = subprocess.Popen(
        [str(venv / "bin" / "terrace"), "serve", "--data", str(data), "--port", str(free_port)],
        cwd=tmp_path,
        env=_clean_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not (data / "dev.json").exists():
            assert server.poll() is None and time.monotonic() < deadline, server.communicate()[0]
            time.sleep(0.1)
        info = json.loads((data / "dev.json").read_text())
        with httpx.Client(verify=ssl.create_default_context(cafile=info["ca_bundle"]), base_url=info["url"]) as http:
            htmx = http.get("/static/htmx.min.js")
            assert htmx.status_code == 200 and htmx.content == HTMX.read_bytes()
            assert http.get("/static/terrace.css").status_code == 200
            login = http.get("/app/sign-in")
            assert login.status_code == 200 and "<html" in login.text.lower()
            headers = {"Authorization": f"Bearer {info['token']}", "Content-Type": "application/vnd.api+json"}
            body = {"data": {"type": "workspaces", "attributes": {"name": "from-wheel"}}}
            made = http.post(f"/api/v2/organizations/{info['organization']}/workspaces", json=body, headers=headers)
            assert made.status_code == 201, made.text
        runner = subprocess.run([str(python), "-c", "import terrace.runner.main"], cwd=tmp_path, timeout=60)
        assert runner.returncode == 0  # the runner comes with the wheel
    finally:
        server.send_signal(signal.SIGTERM)
        output, _ = server.communicate(timeout=30)
    assert server.returncode == 0 and "Traceback" not in output, output
