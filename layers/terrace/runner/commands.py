"""Command lines per Operation, the binary for a terraform-version, and change counts from a JSON plan."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from terrace.domain import query_runs, tool_versions
from terrace.domain.errors import Invalid
from terrace.domain.jobs import Operation
from terrace.runner import catalog as runner_catalog
from terrace.runner.catalog import Catalog
from terrace.runner.rundir import RunSetupError

INIT_ARGS = ["init", "-input=false", "-no-color"]


INVOKE_SINCE = (1, 14)  # terraform's first release with `plan -invoke` (actions)


def plan_args(operation: Operation, plan_file: Path, parallelism: int | None = None) -> list[str]:
    args = ["plan", "-input=false", "-no-color", f"-out={plan_file}", "-detailed-exitcode"]
    if parallelism is not None:
        args.append(f"-parallelism={parallelism}")
    if operation.speculative:
        args.append("-lock=false")  # speculative plans never take the workspace lock (HCP semantics)
    if operation.is_destroy:
        args.append("-destroy")
    if operation.refresh_only:
        args.append("-refresh-only")
    elif not operation.refresh:
        args.append("-refresh=false")
    args += [f"-target={addr}" for addr in operation.target_addrs]
    args += [f"-replace={addr}" for addr in operation.replace_addrs]
    args += [f"-invoke={addr}" for addr in operation.invoke_action_addrs]  # the plan file carries them to apply
    return args


def apply_args(plan_file: Path, parallelism: int | None = None) -> list[str]:
    args = ["apply", "-input=false", "-no-color"]
    if parallelism is not None:
        args.append(f"-parallelism={parallelism}")
    return [*args, str(plan_file)]


def check_invoke(operation: Operation, binary: Binary) -> None:
    """A run that invokes actions needs a binary that can: an older one would run a normal plan and apply."""
    if not operation.invoke_action_addrs:
        return
    numbers = re.match(r"(\d+)\.(\d+)", binary.version)
    found = (int(numbers.group(1)), int(numbers.group(2))) if numbers else None
    if binary.product != "Terraform" or found is None or found < INVOKE_SINCE:
        raise RunSetupError(
            f"this run invokes actions ({', '.join(operation.invoke_action_addrs)[:300]}), which needs "
            f"Terraform {INVOKE_SINCE[0]}.{INVOKE_SINCE[1]} or newer; the runner's binary is "
            f"{binary.product} v{binary.version or 'unknown'}: nothing was planned or applied"
        )


def query_args(operation: Operation, generated: Path) -> list[str]:
    """`terraform query` as HCP runs it: JSON lines (the CLI renders them); with `-generate-config-out` the
    configuration of what it found is in those lines (`generated` is never written when `-json` is given)."""
    args = ["query", "-no-color", "-json"]  # `query` has no -input flag
    return [*args, f"-generate-config-out={generated}"] if operation.generate_config_out else args


def check_query(binary: Binary) -> None:
    """A query run needs a binary with `terraform query` (Terraform 1.14+; OpenTofu has none)."""
    if not query_runs.supports_query(binary.product, binary.version):
        since = ".".join(str(n) for n in query_runs.QUERY_SINCE)
        raise RunSetupError(
            f"this is a query run (terraform query), which needs Terraform {since} or newer; the runner's binary "
            f"is {binary.product} v{binary.version or 'unknown'}: set the workspace's terraform version to {since}"
            " or newer"
        )


def show_json_args(plan_file: Path) -> list[str]:
    return ["show", "-json", str(plan_file)]


@dataclass(frozen=True)
class ChangeCounts:
    additions: int = 0
    changes: int = 0
    destructions: int = 0
    imports: int = 0

    @property
    def any(self) -> bool:
        return bool(self.additions or self.changes or self.destructions or self.imports)


def count_changes(plan_json: dict[str, Any]) -> ChangeCounts:
    """Counts like the CLI's summary: a replace is one addition and one destruction."""
    add = change = destroy = imports = 0
    for rc in plan_json.get("resource_changes") or []:
        if rc.get("mode", "managed") != "managed":
            continue
        body = rc.get("change") or {}
        actions = body.get("actions") or []
        if body.get("importing"):
            imports += 1
        if "create" in actions:
            add += 1
        if "delete" in actions:
            destroy += 1
        if actions == ["update"]:
            change += 1
    return ChangeCounts(add, change, destroy, imports)


@dataclass(frozen=True)
class Binary:
    path: str
    version: str  # "" when unknown
    product: str  # "Terraform" or "OpenTofu"


@lru_cache(maxsize=32)
def detect_version(path: str) -> str:
    """The binary's version (`version -json`, falling back to the text form); "" if it cannot tell."""
    try:
        out = subprocess.run(
            [path, "version", "-json"],
            capture_output=True,
            timeout=30,
            env={"PATH": os.environ.get("PATH", ""), "CHECKPOINT_DISABLE": "1"},
        ).stdout.decode(errors="replace")
    except (OSError, subprocess.SubprocessError):
        return ""
    try:
        return str(json.loads(out).get("terraform_version") or "")
    except ValueError:
        match = re.search(r"v(\d+\.\d+\.\d+\S*)", out)
        return match.group(1) if match else ""


def _resolve(path: str) -> str:
    found = shutil.which(path) if os.sep not in path else (path if os.access(path, os.X_OK) else None)
    if not found:
        raise RunSetupError(f"the runner's terraform binary {path!r} is not installed or not executable")
    return found


def select_binary(
    requested: str,
    default: str,
    installed: dict[str, str],
    catalog: Catalog | None = None,
    default_tool: str = "",
    only: bool = False,
) -> Binary:
    """The binary for a workspace's terraform-version (a version, a constraint or `latest`): the newest in the
    catalog that satisfies it; else the default binary for `latest`, or an installed one of that exact version.
    `only`: the binary must be of `default_tool` (the run's tool), never of the other."""
    wanted = requested.strip().removeprefix("v") or "latest"
    try:
        wanted = tool_versions.check_constraint(wanted)
    except Invalid as exc:
        raise RunSetupError(exc.detail) from exc
    chosen = runner_catalog.choose(catalog or {}, wanted, default_tool, only) if catalog else None
    if chosen is not None:
        tool, version, path = chosen
        return Binary(path=path, version=version, product="OpenTofu" if tool == "opentofu" else "Terraform")
    exact = wanted.removeprefix("=").strip()
    if wanted == "latest":
        path = _resolve(default)
    elif exact in installed:
        path = _resolve(installed[exact])
    else:
        path = _resolve(default)
        if not (detect_version(path) and tool_versions.satisfies(detect_version(path), wanted)):
            versions = sorted({*installed, detect_version(path)} - {""}) or ["none detected"]
            held = runner_catalog.available(catalog or {})
            raise RunSetupError(
                f"terraform version {requested!r} is not installed on this runner; "
                f"installed: {held if catalog and held != 'none' else ', '.join(versions)}"
            )
    product = "OpenTofu" if "tofu" in Path(path).name else "Terraform"
    if only and product != tool_versions.PRODUCTS.get(default_tool, product):
        raise RunSetupError(
            f"the run uses {tool_versions.PRODUCTS[default_tool]} {requested!r} and this runner holds no such binary"
            f"; held: {runner_catalog.available(catalog or {})}"
        )
    return Binary(path=path, version=detect_version(path), product=product)
