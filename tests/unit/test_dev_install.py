"""`make dev` from a fresh clone installs only what the embedded server and its runners need: the project without
extras (no CDK, moto, test or browser tools), terraform and the null provider, and htmx without the CDK CLI
(a devDependency, which `npm ci --omit=dev` leaves out). `make install` puts in the rest."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
NOT_FOR_THE_SERVER = {
    "aws-cdk-lib",
    "constructs",
    "cdk-nag",
    "moto",
    "pytest",
    "pytest-xdist",
    "pytest-timeout",
    "ruff",
    "mypy",
    "playwright",
    "schemathesis",
    "oidc-provider-mock",
    "pyjwt",
}


def _name(requirement: str) -> str:
    return re.split(r"[\[=<>~!; ]", requirement, maxsplit=1)[0].lower()


def _rule(makefile: str, target: str) -> tuple[list[str], list[str]]:
    """A Makefile rule's prerequisites and recipe lines."""
    lines = makefile.splitlines()
    [at] = [n for n, line in enumerate(lines) if line.startswith(f"{target}:")]
    prerequisites = lines[at].split(":", 1)[1].split("|")[0].split()
    recipe = []
    for line in lines[at + 1 :]:
        if not line.startswith("\t"):
            break
        recipe.append(line.strip())
    return prerequisites, recipe


def test_the_projects_own_dependencies_hold_no_tool_of_deployment_or_tests() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert not {_name(r) for r in project["dependencies"]} & NOT_FOR_THE_SERVER
    extras = {_name(r) for group in project["optional-dependencies"].values() for r in group}
    assert {"aws-cdk-lib", "moto", "pytest", "playwright"} <= extras  # where they are: make install's extras


def test_make_dev_installs_the_server_and_htmx_only() -> None:
    makefile = (REPO / "Makefile").read_text()
    for target in ("dev", "dev-fresh"):
        assert _rule(makefile, target)[0] == ["$(STAMP)/server", "$(STAMP)/assets"], target
    _, server = _rule(makefile, "$(STAMP)/server")
    installs = [line for line in server if "$(INSTALL)" in line]  # uv pip install into the venv (INSTALL)
    assert installs[0] == "$(INSTALL) -e ."  # no extras
    assert all("-e ." not in line for line in installs[1:])
    assert re.search(r"^INSTALL := \$\(BIN\)/uv pip install ", makefile, re.M)
    _, assets = _rule(makefile, "$(STAMP)/assets")
    assert "npm ci --omit=dev" in " ".join(assets)


def test_without_dev_dependencies_npm_installs_htmx_alone() -> None:
    lock = json.loads((REPO / "package-lock.json").read_text())["packages"]
    package = json.loads((REPO / "package.json").read_text())
    installed = {path for path, entry in lock.items() if path and not entry.get("dev")}
    assert installed == {"node_modules/htmx.org"}
    assert lock["node_modules/aws-cdk"]["dev"] is True
    assert lock[""]["dependencies"] == package["dependencies"]
    assert lock[""]["devDependencies"] == package["devDependencies"]
