"""The runner's catalog of terraform and OpenTofu binaries: `<tools>/terraform/<version>/terraform` and
`<tools>/tofu/<version>/tofu`, one folder per tool and version (an operator adds a version by adding its
folder). A run uses the newest version that satisfies its workspace's terraform-version."""

from __future__ import annotations

import os
from pathlib import Path

from terrace.domain import tool_versions as tv

Catalog = dict[str, dict[str, str]]  # tool ("terraform" | "opentofu") -> version -> binary path


def scan(tools_dir: Path | None) -> Catalog:
    catalog: Catalog = {tool: {} for tool in tv.TOOLS}
    if tools_dir is None or not tools_dir.is_dir():
        return catalog
    for tool, binary in tv.BINARY_NAMES.items():
        folder = tools_dir / binary
        if not folder.is_dir():
            continue
        for version_dir in folder.iterdir():
            path = version_dir / binary
            if tv.is_version(version_dir.name) and os.access(path, os.X_OK):
                catalog[tool][version_dir.name.removeprefix("v")] = str(path)
    return catalog


def describe(catalog: Catalog) -> str:
    """`terraform=1.0.3,opentofu=1.9.4` (Settings.tool_catalog's format)."""
    return ",".join(f"{tool}={v}" for tool in tv.TOOLS for v in tv.ordered(catalog.get(tool, {})))


def choose(catalog: Catalog, requested: str, default_tool: str, only: bool = False) -> tuple[str, str, str] | None:
    """(tool, version, path) of the newest binary satisfying `requested`: of the default tool when it has
    one, else (unless `only`: the run's tool) of the other tool; None when no binary satisfies it."""
    for tool in [default_tool] if only else sorted(tv.TOOLS, key=lambda t: t != default_tool):
        version = tv.newest(requested, catalog.get(tool, {}))
        if version is not None:
            return tool, version, catalog[tool][version]
    return None


def available(catalog: Catalog) -> str:
    held = [
        f"{'OpenTofu' if tool == 'opentofu' else 'Terraform'} {v}"
        for tool in tv.TOOLS
        for v in tv.ordered(catalog.get(tool, {}))
    ]
    return ", ".join(held) or "none"
