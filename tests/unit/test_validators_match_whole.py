"""Validators of user input match the whole text: `$` also matches before a final newline, so `^name$` takes
`"name\n"` (a key, a name or a version with a newline written on into HCL, tfvars, a header or a file). Every
pattern of the package that ends its match ends it with `\\Z` (or is `fullmatch`ed); `$` is left only to
multi-line patterns (re.MULTILINE)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from terrace.domain import no_code_provisioning, organizations, registry_modules, tool_versions, variables, workspace
from terrace.runner import rundir

PACKAGE = Path(__file__).resolve().parents[2] / "layers" / "terrace"
# a raw pattern literal ending its match with `$` (an f-string of a MULTILINE pattern is flagged by its flag)
DOLLAR_END = re.compile(r"""r[f]?(["'])[^"'\n]*\$\1""")


def test_no_pattern_of_the_package_ends_with_a_dollar_unless_multiline() -> None:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if DOLLAR_END.search(line) and "MULTILINE" not in line and "--get-regexp" not in line:
                found.append(f"{path.relative_to(PACKAGE)}:{number}: {line.strip()}")
    assert not found, "end a validator with \\Z, not $:\n" + "\n".join(found)


@pytest.mark.parametrize(
    ("pattern", "valid"),
    [
        (variables.TERRAFORM_KEY, "region"),
        (variables.ENV_KEY, "AWS_REGION"),
        (variables.TERRAFORM_NAME, "region"),
        (rundir.VAR_NAME, "region"),
        (rundir.ENV_NAME, "AWS_REGION"),
        (no_code_provisioning.IDENTIFIER, "region"),
        (organizations.NAME_RE, "acme"),
        (workspace.NAME_RE, "app"),
        (tool_versions.VERSION_RE, "1.11.0"),
        (registry_modules._SEMVER, "1.0.0"),
    ],
)
def test_a_valid_text_with_a_final_newline_is_refused(pattern: re.Pattern[str], valid: str) -> None:
    assert pattern.match(valid) and pattern.fullmatch(valid)
    assert not pattern.match(valid + "\n")


def test_a_terraform_variable_key_with_a_final_newline_is_422_not_a_tfvars_line() -> None:
    from run_helpers import make_run_env

    env = make_run_env()
    body = {"data": {"type": "vars", "attributes": {"key": "region\n", "value": "x", "category": "terraform"}}}
    answer = env.api("POST", f"/workspaces/{env.workspace_id}/vars", body)
    assert answer.status_code == 422, answer.text
    assert answer.json()["errors"][0]["status"] == "422"
    with pytest.raises(rundir.RunSetupError):
        rundir.render_tfvars([rundir_var("region\n")])


def rundir_var(key: str) -> object:
    from terrace.domain.jobs import RunVariable

    return RunVariable(key=key, value="x", category="terraform", hcl=False, sensitive=False)
