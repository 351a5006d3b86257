"""What a run's tofu/terraform child sees: backend override, CLI config, variables and a from-scratch env."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterable
from pathlib import Path

from terrace.domain.jobs import JobSpec, RunVariable
from terrace.domain.registry_modules import registry_hostname
from terrace.runner.job_folder import JobFolder

OVERRIDE_FILE = "zz_terrace_backend_override.tf"
TFVARS_FILE = "zz_terrace.auto.tfvars"
VAR_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*\Z")
ENV_NAME = re.compile(r"^[^\x00-\x1f\x7f=]+\Z")  # what execve passes on; the API accepts the same
# Set by the runner; a workspace env variable cannot override them.
PROTECTED_ENV = frozenset(
    {
        "TF_CLI_CONFIG_FILE",
        "TF_FORCE_LOCAL_BACKEND",
        "TF_IN_AUTOMATION",
        "TF_INPUT",
        "CHECKPOINT_DISABLE",
        "HOME",
        "PATH",
        "TF_DATA_DIR",
    }
)
CLI_CONFIG_KEYS = (
    "provider_installation",
    "plugin_cache_dir",
    "plugin_cache_may_break_dependency_lock_file",
    "disable_checkpoint",
    "host",
)

BackendOverride = Callable[[JobSpec], str]
PARALLELISM_VARIABLE = "TFE_PARALLELISM"  # a workspace env variable HCP honours: `-parallelism=N` on plan and apply
PARALLELISM_RANGE = range(1, 257)


class RunSetupError(ValueError):
    """The job cannot run as specified (bad variable name, unknown version, ...). Shown to the user."""


def hcl_string(value: str) -> str:
    """A quoted HCL string literal (JSON escapes are valid HCL; `${`/`%{` are escaped)."""
    return json.dumps(value).replace("${", "$${").replace("%{", "%%{")


def remote_backend_override(spec: JobSpec) -> str:
    """The override that makes the child read, lock and write state through Terrace's remote backend API."""
    return (
        "terraform {\n"
        '  backend "remote" {\n'
        f"    hostname     = {hcl_string(spec.hostname)}\n"
        f"    organization = {hcl_string(spec.organization)}\n"
        "    workspaces {\n"
        f"      name = {hcl_string(spec.workspace_name)}\n"
        "    }\n"
        "  }\n"
        "}\n"
    )


def render_tfvars(variables: Iterable[RunVariable]) -> str:
    lines = []
    for var in variables:
        if var.category != "terraform":
            continue
        if not VAR_NAME.match(var.key):
            raise RunSetupError(f"invalid terraform variable name {var.key!r}")
        value = var.value if var.hcl else hcl_string(var.value)
        lines.append(f"{var.key} = {value}\n")
    return "".join(lines)


def env_variables(variables: Iterable[RunVariable]) -> dict[str, str]:
    env: dict[str, str] = {}
    for var in variables:
        if var.category != "env":
            continue
        if not ENV_NAME.match(var.key):
            raise RunSetupError(f"invalid environment variable name {var.key!r}")
        if var.key in PROTECTED_ENV:
            raise RunSetupError(f"environment variable {var.key} is set by the runner and cannot be overridden")
        env[var.key] = var.value
    return env


def parallelism(variables: Iterable[RunVariable]) -> int | None:
    """`TFE_PARALLELISM` among the run's env variables, as terraform's `-parallelism`; None when unset."""
    values = [v.value for v in variables if v.category == "env" and v.key == PARALLELISM_VARIABLE]
    if not values:
        return None
    text = values[-1].strip()
    if not text.isdigit() or int(text) not in PARALLELISM_RANGE:
        raise RunSetupError(
            f"{PARALLELISM_VARIABLE} must be a whole number from {PARALLELISM_RANGE.start} to "
            f"{PARALLELISM_RANGE.stop - 1}, got {values[-1][:40]!r}"
        )
    return int(text)


def run_identity_env(spec: JobSpec, agent_version: str = "") -> dict[str, str]:
    """The variables HCP sets in every run's environment: which run, workspace and project the child runs for,
    the configuration's VCS origin (empty when it has none) and, on an agent, the agent's version."""
    env = {
        "TFC_RUN_ID": spec.run_id,
        "TFC_WORKSPACE_NAME": spec.workspace_name,
        "TFC_WORKSPACE_SLUG": f"{spec.organization}/{spec.workspace_name}",
        "TFC_PROJECT_NAME": spec.project_name,
        "TFC_CONFIGURATION_VERSION_GIT_BRANCH": spec.git_branch,
        "TFC_CONFIGURATION_VERSION_GIT_COMMIT_SHA": spec.git_commit_sha,
        "TFC_CONFIGURATION_VERSION_GIT_TAG": spec.git_tag,
    }
    if agent_version:
        env["TFC_AGENT_VERSION"] = agent_version
    return env


def operator_cli_blocks(text: str) -> str:
    """The top-level `provider_installation` blocks and plugin cache settings of an operator CLI config.

    A small scanner (strings and comments aware); everything else, credentials in particular, is dropped.
    """
    kept: list[str] = []
    i, n = 0, len(text)
    while i < n:
        start = i
        depth, in_string = 0, False
        while i < n:
            ch = text[i]
            if in_string:
                if ch == "\\":
                    i += 1
                elif ch == '"':
                    in_string = False
            elif ch == '"':
                in_string = True
            elif ch == "#" or text.startswith("//", i):
                i = text.find("\n", i)
                i = n if i < 0 else i
                if depth == 0:
                    break
                continue
            elif text.startswith("/*", i):
                end = text.find("*/", i + 2)
                i = n if end < 0 else end + 2
                continue
            elif ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
                if depth == 0:
                    i += 1
                    break
            elif ch == "\n" and depth == 0:
                break
            i += 1
        statement = text[start:i].strip()
        i += 1
        word = re.match(r"[A-Za-z_][A-Za-z0-9_-]*", statement)
        if word and word.group(0) in CLI_CONFIG_KEYS:
            kept.append(statement)
    return "\n".join(kept) + ("\n" if kept else "")


def render_cli_config(hostname: str, run_token: str, operator_config: str = "") -> str:
    """The run token for Terrace's host, and for the name its module registry is reached by (a local server's
    `127.0.0.1:<port>`): `terraform init` installs the organization's private modules with the run's token."""
    hosts = dict.fromkeys((hostname, registry_hostname(hostname)))
    credentials = "".join(f"credentials {hcl_string(h)} {{\n  token = {hcl_string(run_token)}\n}}\n" for h in hosts)
    return credentials + (operator_cli_blocks(operator_config) if operator_config else "")


def child_env(
    *,
    path: str,
    home: Path,
    cli_config: Path,
    ssl_cert_file: str | None,
    variables: Iterable[RunVariable],
    tmp_dir: Path | None = None,
    run_env: dict[str, str] | None = None,
) -> dict[str, str]:
    """Built from scratch: nothing of the runner's own environment leaks in but PATH and the CA bundle. `run_env`
    (`run_identity_env`) wins over a workspace variable of the same name: a run cannot pose as another."""
    env = env_variables(variables)
    env.update(run_env or {})
    env.update(
        PATH=path,
        HOME=str(home),
        TF_CLI_CONFIG_FILE=str(cli_config),
        TF_FORCE_LOCAL_BACKEND="1",
        TF_IN_AUTOMATION="1",
        TF_INPUT="0",
        CHECKPOINT_DISABLE="1",
    )
    if tmp_dir is not None:
        env.setdefault("TMPDIR", str(tmp_dir))
    if ssl_cert_file:
        env["SSL_CERT_FILE"] = ssl_cert_file
    return env


def write_run_files(
    spec: JobSpec, folder: JobFolder, config_dir: Path, operator_config: str, backend_override: BackendOverride
) -> Path:
    """Writes the override and tfvars into the configuration (the job's) and the CLI config into the runner's
    folder (the job reads it, cannot replace it); returns its path."""
    if spec.operation.test is None:  # a module's test run has no backend: its tests keep state in memory
        folder.write_to_job(config_dir / OVERRIDE_FILE, backend_override(spec))
    tfvars = render_tfvars(spec.variables)
    if tfvars or os.path.lexists(config_dir / TFVARS_FILE):  # a resumed folder's older one is replaced
        folder.write_to_job(config_dir / TFVARS_FILE, tfvars)
    cli_config = render_cli_config(spec.hostname, spec.run_token, operator_config)
    return folder.write("terraform.tfrc", cli_config.encode(), job_reads=True)
