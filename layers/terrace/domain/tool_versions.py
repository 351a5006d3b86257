"""Terraform/OpenTofu versions and version constraints, as terraform's own `required_version` reads them.

A workspace's `terraform-version` is a version (`1.9.4`), `latest`, or a constraint (`~> 1.0`,
`>= 1.5, < 2`); a run uses the newest version that satisfies it among those a runner holds.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from terrace.domain.errors import Invalid

TOOLS = ("terraform", "opentofu")  # what runs run
# The site admin's catalogs, by API path: the run tools, and the policy tools TFE lists beside them (OPA policy
# sets are evaluated by Terrace's own engine whatever version a record names; Sentinel is HashiCorp's own and never
# runs here: its versions are records only, as an API client of TFE expects them)
CATALOGS = {
    "terraform-versions": "terraform",
    "opentofu-versions": "opentofu",
    "opa-versions": "opa",
    "sentinel-versions": "sentinel",
}
BINARY_NAMES = {"terraform": "terraform", "opentofu": "tofu"}
PRODUCTS = {"terraform": "Terraform", "opentofu": "OpenTofu"}
# A workspace's tool: Terrace's extension of the TFC workspace, named as Scalr's workspaces name it (Terrakube's
# `iacType`); absent, a TFC client's `terraform-version` keeps its meaning
TOOL_ATTRIBUTE = "iac-platform"


def check_tool(value: object) -> str:
    """`terraform` or `opentofu`; anything else is a 422."""
    if value not in TOOLS:
        pointer = f"/data/attributes/{TOOL_ATTRIBUTE}"
        raise Invalid(f"{TOOL_ATTRIBUTE} must be one of {', '.join(TOOLS)}", pointer=pointer)
    return str(value)


def client_tool(user_agent: str | None, version_header: str | None) -> str:
    """The tool of the CLI that sent a request, "" for any other client: OpenTofu names itself in its User-Agent
    (`OpenTofu/1.9.4`) on every request; terraform's `cloud`/`remote` backend sends `go-tfe` with a
    `Terraform-Version` header (its service discovery: `HashiCorp Terraform/1.11.4 (+https://www.terraform.io)`)."""
    agent = (user_agent or "").strip()
    if agent.startswith("OpenTofu/"):
        return "opentofu"
    go_tfe = agent == "go-tfe" and bool((version_header or "").strip())
    if agent.startswith(("HashiCorp Terraform/", "Terraform/")) or go_tfe:
        return "terraform"
    return ""


# the detached OpenPGP signature of a release's SHA256SUMS, by the names each vendor publishes it under (OpenTofu's
# `.sig` is cosign's, not OpenPGP's)
SIGNATURE_SUFFIXES = {"terraform": (".72D7468F.sig", ".sig"), "opentofu": (".gpgsig",)}
_SUMS_LINE = re.compile(r"^([0-9a-f]{64})\s+\*?(\S+)\Z")


def listed_sums(sums: bytes) -> dict[str, str]:
    """The SHA-256 a SHA256SUMS file lists for each archive name."""
    lines = (_SUMS_LINE.match(line.strip()) for line in sums.decode("utf-8", errors="replace").splitlines())
    return {match.group(2): match.group(1) for match in lines if match}


def mismatch(client: str, tool: str, workspace: str) -> str | None:
    """Why a run `client` (a CLI's tool, "" unknown) sent to a workspace whose runs use `tool` must not run: a
    plan of one tool applied by the other, or state one wrote read by the other, can corrupt state."""
    if not client or not tool or client == tool:
        return None
    return (
        f"workspace {workspace} runs {PRODUCTS[tool]} (its {TOOL_ATTRIBUTE} is {tool}) and this run was sent by "
        f"{PRODUCTS[client]}: a run never switches tools. Use {BINARY_NAMES[tool]} with this workspace, or set its "
        f"{TOOL_ATTRIBUTE} to {client} first."
    )


VERSION_RE = re.compile(r"^v?(\d+)\.(\d+)\.(\d+)(?:-([0-9A-Za-z.-]+))?\Z")
_TERM_RE = re.compile(r"^\s*(~>|>=|<=|!=|=|>|<)?\s*v?(\d+(?:\.\d+){0,2}(?:-[0-9A-Za-z.-]+)?)\s*\Z")

Key = tuple[int, int, int, int, str]  # major, minor, patch, 1 for a release (0 for a pre-release), pre-release


def parse(version: str) -> Key:
    match = VERSION_RE.match(version.strip())
    if not match:
        raise Invalid(f"{version!r} is not a version like 1.9.4", pointer="/data/attributes/version")
    major, minor, patch, pre = match.groups()
    return int(major), int(minor), int(patch), 0 if pre else 1, pre or ""


def is_version(value: str) -> bool:
    return bool(VERSION_RE.match(value.strip()))


def sort_key(version: str) -> str:
    """A string that sorts like the version (for table sort keys)."""
    major, minor, patch, release, pre = parse(version)
    return f"{major:06d}.{minor:06d}.{patch:06d}.{release}{pre}"


def _satisfies_term(version: Key, op: str, raw: str) -> bool:
    parts = raw.split("-", 1)[0].split(".")
    bound = parse(".".join(parts + ["0"] * (3 - len(parts))) + (f"-{raw.split('-', 1)[1]}" if "-" in raw else ""))
    if op == "~>":  # the rightmost given part may grow: ~> 1.2 means >= 1.2, < 2.0; ~> 1.2.3 means < 1.3.0
        if version < bound:
            return False
        if len(parts) == 1:
            return version[0] == bound[0]
        if len(parts) == 2:
            return version[0] == bound[0]
        return version[:2] == bound[:2]
    return {
        "": version == bound,
        "=": version == bound,
        "!=": version != bound,
        ">": version > bound,
        ">=": version >= bound,
        "<": version < bound,
        "<=": version <= bound,
    }[op]


def check_constraint(constraint: str) -> str:
    """`latest`, a version or a constraint, stripped; anything else is a 422."""
    value = constraint.strip()
    if value in ("", "latest"):
        return "latest"
    for term in value.split(","):
        if not _TERM_RE.match(term):
            raise Invalid(
                f"terraform-version {constraint!r} is neither a version, 'latest' nor a constraint such as '~> 1.0'",
                pointer="/data/attributes/terraform-version",
            )
    return value


def satisfies(version: str, constraint: str) -> bool:
    value = check_constraint(constraint)
    key = parse(version)
    if value == "latest":
        return key[3] == 1  # `latest` never picks a pre-release
    terms = [_TERM_RE.match(term) for term in value.split(",")]
    if key[3] == 0 and not any(t and t.group(2) == version.strip().removeprefix("v") for t in terms):
        return False  # a pre-release only when named exactly, as terraform does
    return all(t is not None and _satisfies_term(key, t.group(1) or "", t.group(2)) for t in terms)


def newest(constraint: str, versions: Iterable[str]) -> str | None:
    """The newest of `versions` that satisfies `constraint`, or None."""
    matching = [v for v in versions if is_version(v) and satisfies(v, constraint)]
    return max(matching, key=parse) if matching else None


def ordered(versions: Iterable[str]) -> list[str]:
    return sorted({v for v in versions if is_version(v)}, key=parse)


@dataclass(frozen=True)
class ToolVersion:
    id: str
    tool: str
    version: str
    url: str
    sha: str
    official: bool
    enabled: bool
    beta: bool
    deprecated: bool
    deprecated_reason: str | None
    created_at: str
    usable: bool
    archs: list[dict[str, str]] = field(default_factory=list)
