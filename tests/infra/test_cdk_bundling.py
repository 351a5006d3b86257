"""Layer bundling without Docker: the pip command, the cache under .build/, the layout Lambda expects."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from infra import bundling
from infra.settings import LAMBDA_PYTHON_VERSION

pytestmark = pytest.mark.infra


def test_layer_requirements_come_from_pyproject_with_the_tracer_extra():
    requirements = bundling.layer_requirements()
    names = {r.split("==")[0] for r in requirements}
    assert {"aws-lambda-powertools[tracer]", "fastapi", "mangum", "pydantic", "pydantic-settings", "jinja2"} <= names
    assert all("==" in r for r in requirements), "every layer dependency is pinned"


def test_pip_command_targets_lambda_arm64_wheels_only(tmp_path):
    command = bundling.pip_command(tmp_path / "out", ["fastapi==1"])
    text = " ".join(command)
    assert "--platform manylinux2014_aarch64" in text
    assert "--only-binary=:all:" in text
    assert f"--python-version {LAMBDA_PYTHON_VERSION}" in text
    assert f"--target {tmp_path / 'out'}" in text
    assert command[-1] == "fastapi==1"


def test_local_bundling_builds_python_folder_and_caches_dependencies(tmp_path, monkeypatch):
    monkeypatch.setattr(bundling, "CACHE", tmp_path / "cache")
    calls: list[list[str]] = []

    def fake_pip(command: list[str], check: bool) -> None:
        calls.append(command)
        target = Path(command[command.index("--target") + 1])
        (target / "fastapi").mkdir(parents=True)
        (target / "fastapi" / "__init__.py").write_text("")
        (target / "botocore" / "data").mkdir(parents=True)  # the layer's botocore, not this machine's
        (target / "botocore" / "__init__.py").write_text("__version__ = '9.8.7'\n")
        partition = {"partition": "aws", "regions": {"us-east-1": {}}, "services": {"dynamodb": {}, "ec2": {}}}
        (target / "botocore" / "data" / "endpoints.json").write_text(json.dumps({"partitions": [partition]}))

    bundler = bundling.LayerBundling(["fastapi==1"], run=fake_pip)
    for n in (1, 2):
        out = tmp_path / f"out{n}"
        out.mkdir()
        assert bundler.try_bundle(str(out), image=None) is True
        assert (out / "python" / "fastapi" / "__init__.py").exists()
        assert (out / "python" / "terrace" / "__init__.py").exists()
        assert (out / "python" / "terrace" / "bootstrap.py").exists()
        tag = f"cpython-{LAMBDA_PYTHON_VERSION.replace('.', '')}"  # bytecode of the Lambda's Python only
        assert all(tag in pyc.name for pyc in (out / "python").rglob("*.pyc"))
        assert not (out / "python" / ".complete").exists()
        # the pruned endpoints file of the bundled botocore (adapters/boto_session.py), and none of this machine's
        carried = sorted((out / "python" / "terrace" / "adapters" / "botocore_data").iterdir())
        assert [c.name for c in carried] == ["9.8.7"]
        pruned = json.loads((carried[0] / "endpoints.json").read_text())
        assert list(pruned["partitions"][0]["services"]) == ["dynamodb"]
    assert len(calls) == 1, "the second bundle reuses the cached dependencies"


def test_a_failed_pip_install_leaves_no_half_cache(tmp_path, monkeypatch):
    monkeypatch.setattr(bundling, "CACHE", tmp_path / "cache")

    def failing_pip(command: list[str], check: bool) -> None:
        raise RuntimeError("no network")

    bundler = bundling.LayerBundling(["fastapi==1"], run=failing_pip)
    with pytest.raises(RuntimeError):
        bundler.try_bundle(str(tmp_path / "out"), image=None)
    assert not bundler.deps_dir().exists()
