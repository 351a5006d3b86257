"""Validators of user input match the whole text: `$` also matches before a final newline, so `^name$` takes
`"name\n"` (a key, a name or a version with a newline written on into HCL, tfvars, a header or a file). Every
pattern of the package that ends its match ends it with `\\Z` (or is `fullmatch`ed); `$` is left only to
multi-line patterns (re.MULTILINE)."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from terrace.domain import no_code_provisioning, organizations, registry_modules, tool_versions, variables, workspace
from terrace.runner import rundir

PACKAGE = Path(__file__).resolve().parents[2] / "layers" / "terrace"
CALLS = {"compile", "match", "search", "fullmatch", "sub", "subn", "split", "findall", "finditer"}


def _dollar_ended_patterns(tree: ast.AST) -> Iterator[ast.Call]:
    """Calls of `re.<fn>` whose pattern (a literal, f-strings and implicit concatenations included) ends its match
    with `$`, without re.MULTILINE. (pydantic's `Field(pattern=...)` is Rust's regex, whose `$` is the text's end.)"""
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args):
            continue
        if not (isinstance(node.func.value, ast.Name) and node.func.value.id == "re" and node.func.attr in CALLS):
            continue
        pattern = node.args[0]
        tail = pattern.values[-1] if isinstance(pattern, ast.JoinedStr) and pattern.values else pattern
        text = tail.value if isinstance(tail, ast.Constant) and isinstance(tail.value, str) else ""
        if text.endswith("$") and not text.endswith("\\$") and "MULTILINE" not in ast.dump(node):
            yield node


def test_no_pattern_of_the_package_ends_with_a_dollar_unless_multiline() -> None:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for call in _dollar_ended_patterns(ast.parse(path.read_text())):
            found.append(f"{path.relative_to(PACKAGE)}:{call.lineno}")
    assert not found, "end a validator with \\Z, not $: " + ", ".join(found)


def test_the_rule_sees_a_dollar_at_the_end_of_a_pattern() -> None:
    flagged = "import re\nA = re.compile(r'^a$')\nB = re.compile(\n    r'^b'\n    r'c$'\n)\nre.match(rf'^{x}$', y)\n"
    kept = "import re\nA = re.compile(r'^a\\Z')\nB = re.compile(r'^b$', re.MULTILINE)\nP = r'^[a-z]+$'\n"
    assert [c.lineno for c in _dollar_ended_patterns(ast.parse(flagged))] == [2, 3, 7]
    assert not list(_dollar_ended_patterns(ast.parse(kept)))


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
