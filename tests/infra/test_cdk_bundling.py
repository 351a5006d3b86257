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


LAMBDA_PYTHON = bundling.lambda_python()


def test_local_bundling_builds_python_folder_and_caches_dependencies(tmp_path, monkeypatch):
    """The first bundle's bytecode is built by the Lambda's Python when this machine has one (else that part of the
    check is left out); the second bundle's compilation is skipped (it is the same step: the time is the layer's
    whole tree)."""
    monkeypatch.setattr(bundling, "CACHE", tmp_path / "cache")
    calls: list[list[str]] = []

    def fake_pip(command: list[str], check: bool) -> None:
        calls.append(command)
        target = Path(command[command.index("--target") + 1])
        (target / "fastapi").mkdir(parents=True)
        (target / "fastapi" / "__init__.py").write_text("")
        (target / "fastapi" / "__pycache__").mkdir()
        (target / "fastapi" / "__pycache__" / "__init__.cpython-311.pyc").write_bytes(b"pip's, of this Python")
        (target / "botocore" / "data").mkdir(parents=True)  # the layer's botocore, not this machine's
        for service in ("dynamodb", "ec2", "sagemaker"):
            (target / "botocore" / "data" / service / "2012-08-10").mkdir(parents=True)
        (target / "botocore" / "data" / "_retry.json").write_text("{}")
        (target / "botocore" / "__init__.py").write_text("__version__ = '9.8.7'\n")
        partition = {"partition": "aws", "regions": {"us-east-1": {}}, "services": {"dynamodb": {}, "ec2": {}}}
        (target / "botocore" / "data" / "endpoints.json").write_text(json.dumps({"partitions": [partition]}))

    bundler = bundling.LayerBundling(["fastapi==1"], run=fake_pip)
    for n in (1, 2):
        if n == 2 or LAMBDA_PYTHON is None:
            monkeypatch.setattr(bundling, "compile_bytecode", lambda site, python=None: None)
        out = tmp_path / f"out{n}"
        out.mkdir()
        assert bundler.try_bundle(str(out), image=None) is True
        assert (out / "python" / "fastapi" / "__init__.py").exists()
        assert (out / "python" / "terrace" / "__init__.py").exists()
        assert (out / "python" / "terrace" / "bootstrap.py").exists()
        tag = f"cpython-{LAMBDA_PYTHON_VERSION.replace('.', '')}"  # bytecode of the Lambda's Python only
        compiled = list((out / "python").rglob("*.pyc"))
        assert all(tag in pyc.name for pyc in compiled)  # pip's (this Python's) is left behind
        if n == 1 and LAMBDA_PYTHON is not None:
            assert (out / "python" / "terrace" / "__pycache__" / f"bootstrap.{tag}.pyc").is_file()
        # only the botocore data of the services Terrace calls, and botocore's own top-level files
        data = out / "python" / "botocore" / "data"
        assert sorted(f.name for f in data.iterdir()) == ["_retry.json", "dynamodb", "endpoints.json"]
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


def test_without_the_lambdas_python_the_synth_fails_rather_than_ship_a_layer_without_bytecode(tmp_path, monkeypatch):
    monkeypatch.setattr(bundling, "lambda_python", lambda version=LAMBDA_PYTHON_VERSION: None)
    (tmp_path / "terrace").mkdir()
    (tmp_path / "terrace" / "app.py").write_text("")
    with pytest.raises(
        bundling.BytecodeError, match=f"bytecode for Python {LAMBDA_PYTHON_VERSION}.*TERRACE_LAMBDA_PYTHON"
    ):
        bundling.compile_bytecode(tmp_path)


def test_the_lambdas_python_is_found_where_it_is_installed_and_checked_by_its_version(tmp_path, monkeypatch):
    """A pyenv installation is found though its shim answers 127 (the version is not selected here); a Python of
    another version named by the variable is not taken for it."""
    import sys

    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setenv("PYENV_ROOT", str(tmp_path / "pyenv"))
    monkeypatch.setenv("TERRACE_LAMBDA_PYTHON", sys.executable)  # this Python: not the Lambda's version
    assert bundling.lambda_python(version="3.99") is None
    installed = tmp_path / "pyenv" / "versions" / "3.99.1" / "bin" / "python3.99"
    installed.parent.mkdir(parents=True)
    installed.write_text("#!/bin/sh\necho 3.99\n")
    installed.chmod(0o755)
    assert bundling.lambda_python(version="3.99") == str(installed)


def test_a_module_left_without_bytecode_fails_the_synth(tmp_path):
    """A compiler that wrote nothing (or skipped a module) is caught by looking for every module's bytecode."""
    (tmp_path / "site" / "terrace").mkdir(parents=True)
    (tmp_path / "site" / "terrace" / "app.py").write_text("x = 1\n")
    silent = tmp_path / "python"
    silent.write_text("#!/bin/sh\nexit 0\n")
    silent.chmod(0o755)
    with pytest.raises(bundling.BytecodeError, match="1 modules have no cpython-"):
        bundling.compile_bytecode(tmp_path / "site", python=str(silent))
