"""Reading a policy set version's tarball the way HCP Terraform reads one: `.rego` files anywhere in it, a
`policies.hcl` at its root naming each policy (`policy "name" { query = "...", enforcement_level = "..." }`) and
optional `data.json` files (rooted under `data` at their folder's path, as OPA bundles are).

Nothing is written to disk: `domain/bounded_tar.py` reads the files in memory within the bounds below, each member
through tarfile's `data` filter (a member it refuses refuses the whole tarball). The `policies.hcl` is parsed by the
HCL reader port (`adapters/hcl_reader.py`: python-hcl2 in a bounded child process, never in this process).
"""

from __future__ import annotations

import json
import posixpath
from typing import Any

from terrace.adapters.hcl_reader import HclReader
from terrace.domain import policies as rules
from terrace.domain.bounded_tar import TarBounds, read_files
from terrace.domain.errors import Invalid
from terrace.domain.policies import Bundle, VersionPolicy

ARCHIVE_MAX_BYTES = 1024 * 1024  # the compressed tarball
BOUNDS = TarBounds("a policy set version", ARCHIVE_MAX_BYTES, files_max=200, total_max=4 * 1024 * 1024,
                   file_max=256 * 1024)  # fmt: skip
ROOT = "/policy-set-version"


def read_tarball(raw: bytes, hcl: HclReader) -> Bundle:
    """The bundle of a `.tar.gz`, or Invalid naming what is wrong with it."""
    return _bundle(read_files(raw, BOUNDS, ROOT), hcl)


def _bundle(files: dict[str, bytes], hcl: HclReader) -> Bundle:
    modules: dict[str, str] = {}
    data: dict[str, Any] = {}
    for name, body in sorted(files.items()):
        if name.endswith(".rego"):
            modules[name] = _text(name, body)
        elif posixpath.basename(name) == "data.json":
            data = _merge(data, posixpath.dirname(name), name, body)
    policies = parse_policies_hcl(_text("policies.hcl", files["policies.hcl"]), hcl) if "policies.hcl" in files else ()
    return Bundle(modules=modules, data=data, policies=policies, files=tuple(sorted(files)))


def _text(name: str, body: bytes) -> str:
    try:
        return body.decode()
    except UnicodeDecodeError as exc:
        raise Invalid(f"{name} is not UTF-8 text") from exc


def _merge(data: dict[str, Any], folder: str, name: str, body: bytes) -> dict[str, Any]:
    try:
        document = json.loads(body)
    except ValueError as exc:
        raise Invalid(f"{name} is not JSON: {exc}") from exc
    node = data
    for part in [p for p in folder.split("/") if p]:
        node = node.setdefault(part, {})
    if isinstance(document, dict):
        node.update(document)
    return data


def parse_policies_hcl(text: str, hcl: HclReader) -> tuple[VersionPolicy, ...]:
    """The `policy` blocks of a policies.hcl."""
    parsed = hcl.parse({"policies.hcl": text})
    if "policies.hcl" not in parsed.documents:
        raise Invalid(f"policies.hcl: {parsed.errors.get('policies.hcl') or parsed.stopped or 'not read'}")
    document = parsed.documents["policies.hcl"]
    found: list[VersionPolicy] = []
    for block in document.get("policy", []) if isinstance(document, dict) else []:
        for raw_name, body in block.items():
            name = rules.check_name(_unquote(raw_name), "policy name")
            if not isinstance(body, dict):
                raise Invalid(f"policies.hcl: policy {name} has no body")
            level = _unquote(body.get("enforcement_level", "advisory"))
            found.append(
                VersionPolicy(
                    name=name,
                    query=rules.check_query(_unquote(body.get("query"))),
                    enforcement_level=rules.check_level("opa", level),
                    description=_unquote(body.get("description", "")),
                )
            )
    if len({p.name for p in found}) != len(found):
        raise Invalid("policies.hcl names a policy twice")
    return tuple(found)


def _unquote(value: Any) -> str:
    text = "" if value is None else str(value)
    return text[1:-1] if len(text) >= 2 and text[0] == text[-1] == '"' else text
