"""A workspace provisioned from a no-code module (HCP Terraform's `POST /no-code-modules/:id/workspaces`): the
variables a request sends (`relationships.vars`), checked against the module's inputs and variable options, and the
configuration Terrace generates for it: a root module that calls the module's pinned version from the private
registry, passing each terraform variable through a variable of the same name (so a sensitive value stays a
workspace variable, never text in the archive) and re-exporting the module's outputs."""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from terrace.domain import limits
from terrace.domain.bounded_tar import write_tar
from terrace.domain.errors import Invalid
from terrace.domain.no_code_modules import VariableOption

VARS_MAX = 200  # variables per provisioning request
IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]{0,127}\Z")  # an HCL identifier, the whole text
POINTER = "/data/relationships/vars"
SOURCE = "tfe-module"  # the workspace's and its configuration versions' `source`


@dataclass(frozen=True)
class Provisioned:
    """What a workspace made from a no-code module records (in its `extra`): the module and the version it runs."""

    no_code_module_id: str
    version: str
    source_module_id: str  # HCP's `source-module-id`: private/<namespace>/<name>/<provider>/<version>

    def extra(self) -> dict[str, str]:
        return {"source": SOURCE, "source-module-id": self.source_module_id,
                "no-code-module-id": self.no_code_module_id, "no-code-version": self.version}  # fmt: skip


def _flag(attrs: dict[str, Any], key: str) -> bool:
    value = attrs.get(key, False)
    if not isinstance(value, bool):
        raise Invalid(f"vars: {key} must be true or false", pointer=POINTER)
    return value


def check_vars(raw: Any) -> list[dict[str, Any]]:
    """The `vars` of a request (each `{type: vars, attributes: {key, value, category, hcl, sensitive}}`), as
    workspace variable attributes; a terraform variable's key must be an HCL identifier (it names an input)."""
    if raw is None:
        return []
    if not isinstance(raw, list) or len(raw) > VARS_MAX:
        raise Invalid(f"vars must be a list of at most {VARS_MAX} variables", pointer=POINTER)
    found: list[dict[str, Any]] = []
    for member in raw:
        attrs = member.get("attributes") if isinstance(member, dict) else None
        if not isinstance(attrs, dict):
            raise Invalid("each variable needs its attributes", pointer=POINTER)
        key, value, category = attrs.get("key"), attrs.get("value", ""), attrs.get("category", "terraform")
        if category not in ("terraform", "env"):
            raise Invalid("vars: category must be terraform or env", pointer=POINTER)
        if not isinstance(key, str) or not key or len(key) > limits.RUN_VARIABLE_KEY_MAX:
            raise Invalid("each variable needs a key", pointer=POINTER)
        if category == "terraform" and not IDENTIFIER.fullmatch(key):
            raise Invalid(f"variable {key!r}: a terraform variable's key is a letter or _, then letters, digits, _ "
                          "and -", pointer=POINTER)  # fmt: skip
        if not isinstance(value, str) or len(value) > limits.RUN_VARIABLE_VALUE_MAX:
            raise Invalid(f"variable {key}: value must be a string of at most {limits.RUN_VARIABLE_VALUE_MAX} "
                          "characters", pointer=POINTER)  # fmt: skip
        if any(f["key"] == key and f["category"] == category for f in found):
            raise Invalid(f"variable {key} is sent twice", pointer=POINTER)
        var = {"key": key, "value": value, "category": category,
               "hcl": _flag(attrs, "hcl"), "sensitive": _flag(attrs, "sensitive")}  # fmt: skip
        if isinstance(attrs.get("description"), str):
            var["description"] = attrs["description"]
        found.append(var)
    return found


def _plain(var: dict[str, Any]) -> Any:
    """A variable's value as one of its options would spell it (an HCL string literal unquoted)."""
    if var["hcl"]:
        try:
            return json.loads(var["value"])
        except ValueError:
            return var["value"]
    return var["value"]


def check_inputs(
    variables: Sequence[dict[str, Any]], inputs: Sequence[dict[str, Any]], options: Iterable[VariableOption]
) -> None:
    """The terraform variables against the version's inputs (when they are known): none that is no input, every
    required input given, and a value among its options where the module designates some."""
    given = {v["key"]: v for v in variables if v["category"] == "terraform"}
    if inputs:
        names = {str(i.get("name")) for i in inputs}
        unknown = sorted(set(given) - names)
        if unknown:
            raise Invalid(f"the module has no input {', '.join(unknown)}", pointer=POINTER)
        missing = sorted(str(i["name"]) for i in inputs if i.get("required") and i.get("name") not in given)
        if missing:
            raise Invalid(f"the module's required inputs need a value: {', '.join(missing)}", pointer=POINTER)
    for option in options:
        var = given.get(option.variable_name)
        if var is not None and option.options and str(_plain(var)) not in option.options:
            raise Invalid(f"variable {option.variable_name} must be one of {', '.join(option.options)}",
                          pointer=POINTER)  # fmt: skip


def hcl_string(value: str) -> str:
    """A quoted HCL string literal of `value`: JSON's escapes, and `${`/`%{` escaped so nothing is a template."""
    return json.dumps(value).replace("${", "$${").replace("%{", "%%{")


def unpassable(variables: Sequence[dict[str, Any]]) -> list[str]:
    """The terraform variables whose keys cannot name a module argument (a workspace variable's key may be any
    text, `domain/variables.py`): the generated configuration passes none of them."""
    return [str(v["key"]) for v in variables if v["category"] == "terraform" and not IDENTIFIER.fullmatch(v["key"])]


def root_module(
    source: str, version: str, name: str, variables: Sequence[dict[str, Any]], outputs: Sequence[dict[str, Any]]
) -> str:
    """The generated configuration (`main.tf`): `source` is `<host>/<namespace>/<name>/<provider>`. Only HCL
    identifiers become names in it (a key that is none is refused: `unpassable`); no value is written into it
    (each terraform variable reaches the module through a variable of the same name, set by the workspace)."""
    bad = unpassable(variables)
    if bad:
        raise Invalid(f"variable {bad[0]!r}: a module argument's name is a letter or _, then letters, digits, _ "
                      "and -", pointer=POINTER)  # fmt: skip
    label = name if IDENTIFIER.fullmatch(name) else "main"
    lines = [f"# Provisioned by Terrace from a no-code module: {hcl_string(f'{source} {version}')}", ""]
    passed = [v for v in variables if v["category"] == "terraform"]
    for var in passed:
        lines += [f'variable "{var["key"]}" {{'] + (["  sensitive = true"] if var["sensitive"] else []) + ["}", ""]
    lines += [f'module "{label}" {{', f"  source  = {hcl_string(source)}", f"  version = {hcl_string(version)}"]
    lines += [f"  {var['key']} = var.{var['key']}" for var in passed] + ["}", ""]
    for out in outputs:
        if IDENTIFIER.fullmatch(str(out.get("name"))):
            lines += [f'output "{out["name"]}" {{', f"  value = module.{label}.{out['name']}"]
            lines += (["  sensitive = true"] if out.get("sensitive") else []) + ["}", ""]
    return "\n".join(lines)


def configuration_archive(main_tf: str) -> bytes:
    """The generated configuration as a configuration version's archive."""
    out = io.BytesIO()
    with write_tar(out) as tar:
        tar.add("main.tf", main_tf.encode())
    return out.getvalue()
