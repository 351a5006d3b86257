"""Warnings in a run's log for the deprecated and revoked versions of the organization's private modules its
`terraform init` installed, as HCP Terraform shows them in a run's output.

After init, the runner reads what init recorded (`.terraform/modules/modules.json`, copied out of the job's folder by
`JobFolder.copy_from_job`: a regular file of the job's own, bounded) and, for each module from this deployment's
registry, the registry protocol's versions of it with the run's token (what init itself read): a version listed with
a `deprecation` (and, if revoked, a `revocation`) gets a warning with its reason and link. Nothing here can fail the
run: an unreadable record or an unanswered read means no warning.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from typing import Any

from terrace.domain.registry_modules import registry_hostname
from terrace.runner.job_folder import UnsafeJobFile
from terrace.runner.job_setup import Job

MODULES_JSON = ".terraform/modules/modules.json"
MODULES_JSON_MAX = 4 * 1024 * 1024
MAX_MODULES = 200  # registry reads per run at most
ADDRESS = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}/[A-Za-z0-9][A-Za-z0-9_-]{0,63}/[A-Za-z0-9][A-Za-z0-9_-]{0,63}")
VERSION = re.compile(r"[0-9A-Za-z.+-]{1,128}")

Versions = Callable[[str], Any]  # "org/name/provider" -> the protocol's versions answer (None when unread)


def installed(modules_json: bytes, hosts: Iterable[str]) -> list[tuple[str, str, str]]:
    """(module key, "org/name/provider", version) of each module init installed from one of `hosts`."""
    try:
        entries = json.loads(modules_json).get("Modules")
    except (ValueError, AttributeError):
        return []
    prefixes = tuple(f"{host}/" for host in hosts)
    found: list[tuple[str, str, str]] = []
    for entry in entries if isinstance(entries, list) else []:
        if not isinstance(entry, dict):
            continue
        source, version, key = entry.get("Source"), entry.get("Version"), entry.get("Key")
        if not (isinstance(source, str) and isinstance(version, str) and version and source.startswith(prefixes)):
            continue
        address = source.split("/", 1)[1].split("//", 1)[0]  # a sub-directory (`//modules/x`) is the same package
        if ADDRESS.fullmatch(address) and VERSION.fullmatch(version):  # what the job wrote goes into no URL else
            found.append((str(key or address)[:200], address, version))
    return list(dict.fromkeys(found))[:MAX_MODULES]


def warnings(modules: list[tuple[str, str, str]], versions: Versions) -> list[str]:
    """The log lines for `modules` whose version the registry lists deprecated or revoked."""
    lines: list[str] = []
    listed: dict[str, dict[str, dict[str, Any]]] = {}
    for key, address, version in modules:
        if address not in listed:
            answer = versions(address)
            try:
                found = answer["modules"][0]["versions"]
                listed[address] = {v["version"]: v for v in found if isinstance(v, dict) and "version" in v}
            except (TypeError, KeyError, IndexError):
                listed[address] = {}
        entry = listed[address].get(version) or {}
        revocation, deprecation = entry.get("revocation"), entry.get("deprecation")
        if not isinstance(deprecation, dict) and not isinstance(revocation, dict):
            continue
        notice = revocation if isinstance(revocation, dict) else deprecation
        assert isinstance(notice, dict)
        what = "revoked" if isinstance(revocation, dict) else "deprecated"
        reason = str(notice.get("message") or notice.get("reason") or "no reason given")[:1000]
        lines += ["", f"Warning: {what.capitalize()} module version", ""]
        lines.append(f'  Module "{key}" uses version {version} of {address}, which its publisher {what}: {reason}')
        if notice.get("link"):
            lines.append(f"  More: {str(notice['link'])[:2048]}")
        if what == "revoked":
            lines.append("  Configurations uploaded since its revocation cannot install it: upgrade the module.")
    return lines + ([""] if lines else [])


def warn(job: Job, module_versions: Callable[[str, str], Any]) -> None:
    """After init: the warnings for `job`'s modules in its log; `module_versions(address, run_token)` reads the
    registry protocol (`RunnerApi.module_versions`)."""
    try:
        copy = job.folder.copy_from_job(job.cwd / MODULES_JSON, "modules.json", MODULES_JSON_MAX)
        modules = installed(copy.read_bytes(), {job.spec.hostname, registry_hostname(job.spec.hostname)})
    except (UnsafeJobFile, OSError):
        return  # no module installed (or nothing readable of it): nothing to warn of
    for line in warnings(modules, lambda address: module_versions(address, job.spec.run_token)):
        job.log.line(line)
