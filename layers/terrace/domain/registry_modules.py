"""The private module registry: a module (organization, namespace, name, provider) and its versions.

A private module's namespace is its organization's name; a `public` entry only points at a public registry's
module (namespace required, no versions of its own). Versions are semantic versions (`1.2.3`, `1.2.3-rc.1`,
`+build`), stored under their exact text and ordered as terraform orders them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from terrace.domain.errors import Invalid

PRIVATE, PUBLIC = "private", "public"
REGISTRY_NAMES = (PRIVATE, PUBLIC)
# module statuses (go-tfe's RegistryModuleStatus) and version statuses (RegistryModuleVersionStatus)
MODULE_PENDING, MODULE_READY = "pending", "setup_complete"
VERSION_PENDING, VERSION_OK, VERSION_FAILED = "pending", "ok", "reg_ingress_failed"

# the public registry's rules for a name and a provider (`terraform-<provider>-<name>`)
_NAME = re.compile(r"^[0-9A-Za-z](?:[0-9A-Za-z_-]{0,62}[0-9A-Za-z])?\Z")
_PROVIDER = re.compile(r"^[0-9a-z]{1,64}\Z")
_NAMESPACE = re.compile(r"^[0-9A-Za-z](?:[0-9A-Za-z_-]{0,62}[0-9A-Za-z])?\Z")
_SEMVER = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-((?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*)(?:\.(?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*))*))?"
    r"(?:\+([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?\Z"
)
VERSION_MAX = 128
GIT_TAG, BRANCH = "git_tag", "branch"  # HCP's publishing mechanisms of a module published from a repository
_REPOSITORY = re.compile(r"^terraform-([0-9a-z]{1,64})-([0-9A-Za-z](?:[0-9A-Za-z_-]{0,62}[0-9A-Za-z])?)\Z")
_TAG = re.compile(r"^v?(\d+\.\d+\.\d+(?:[-+][0-9A-Za-z.+-]*)?)\Z")


@dataclass(frozen=True)
class ModuleVersion:
    id: str
    module_id: str
    version: str
    status: str
    created_at: str
    updated_at: str
    error: str | None = None
    blob_key: str = ""
    size: int | None = None
    md5: str | None = None
    deprecation: dict[str, str] | None = None  # {"reason", "link"} of a deprecated version (`check_deprecation`)
    # {"message", "link", "revoked-at"} of a revoked version (`check_revocation`): a configuration uploaded after
    # `revoked-at` may no longer install it (`installable_by`); one from before still does, with a warning
    revocation: dict[str, str] | None = None
    source: str = "tfe-api"  # github, gitlab: published from a repository's tag or commit
    commit_sha: str | None = None
    readme: str = ""
    inputs: tuple[dict[str, Any], ...] = ()
    outputs: tuple[dict[str, Any], ...] = ()
    resources: tuple[dict[str, Any], ...] = ()


@dataclass(frozen=True)
class ModuleContents:
    """What the UI shows of a module version, read from its tarball's root."""

    readme: str = ""
    inputs: list[dict[str, Any]] = field(default_factory=list)
    outputs: list[dict[str, Any]] = field(default_factory=list)
    resources: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class RegistryModule:
    id: str
    organization: str  # the storage key of the organization
    organization_name: str
    registry_name: str
    namespace: str
    name: str
    provider: str
    created_at: str
    updated_at: str
    versions: tuple[ModuleVersion, ...] = field(default=())
    can_manage: bool = False  # whether the caller who read it may change it (its `permissions`)
    vcs_repo: dict[str, Any] | None = None  # the repository it is published from (`services/vcs/connections.py`)
    publishing_mechanism: str | None = None  # git_tag (tags vX.Y.Z) or branch (versions by commit through the API)

    @property
    def branch_based(self) -> bool:
        return self.publishing_mechanism == BRANCH

    @property
    def status(self) -> str:
        return MODULE_READY if any(v.status == VERSION_OK for v in self.versions) else MODULE_PENDING

    @property
    def address(self) -> str:
        return f"{self.namespace}/{self.name}/{self.provider}"


def check_name(value: Any, what: str = "name") -> str:
    if not isinstance(value, str) or not value:
        raise Invalid(f"{what} is required", pointer=f"/data/attributes/{what}")
    if not _NAME.match(value):
        raise Invalid(
            f"{what} must be 1 to 64 letters, digits, '-' or '_', starting and ending with a letter or digit",
            pointer=f"/data/attributes/{what}",
        )
    return value


def check_provider(value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise Invalid("provider is required", pointer="/data/attributes/provider")
    if not _PROVIDER.match(value):
        raise Invalid("provider must be 1 to 64 lower-case letters or digits", pointer="/data/attributes/provider")
    return value


def check_namespace(value: Any) -> str:
    if not isinstance(value, str) or not _NAMESPACE.match(value):
        raise Invalid("namespace must be 1 to 64 letters, digits, '-' or '_'", pointer="/data/attributes/namespace")
    return value


def check_registry_name(value: Any) -> str:
    if value is None or value == "":
        return PRIVATE
    if value not in REGISTRY_NAMES:
        raise Invalid("registry-name must be private or public", pointer="/data/attributes/registry-name")
    return str(value)


def check_version(value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise Invalid("version is required", pointer="/data/attributes/version")
    if len(value) > VERSION_MAX or not _SEMVER.match(value):
        raise Invalid(
            "version must be a semantic version (MAJOR.MINOR.PATCH[-pre][+build])", pointer="/data/attributes/version"
        )
    return value


def from_repository(identifier: str) -> tuple[str, str]:
    """(name, provider) of a module published from a repository named `terraform-<provider>-<name>`."""
    found = _REPOSITORY.match(identifier.rsplit("/", 1)[-1])
    if found is None:
        raise Invalid("a module's repository is named terraform-<provider>-<name> (terraform-aws-vpc)",
                      pointer="/data/attributes/vcs-repo/identifier")  # fmt: skip
    return found[2], found[1]


def tag_version(tag: str) -> str | None:
    """The module version a tag publishes (`v1.2.3` and `1.2.3` alike), None for a tag that is not one."""
    found = _TAG.match(tag)
    return found[1] if found is not None and is_version(found[1]) else None


def is_version(value: str) -> bool:
    return len(value) <= VERSION_MAX and _SEMVER.match(value) is not None


def version_key(value: str) -> tuple[Any, ...]:
    """Semantic version precedence (build metadata ignored; a release after its pre-releases)."""
    match = _SEMVER.match(value)
    if match is None:
        return (0, 0, 0, 0, ())
    major, minor, patch, pre = int(match[1]), int(match[2]), int(match[3]), match[4]
    if pre is None:
        return (major, minor, patch, 1, ())
    parts = tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in pre.split("."))
    return (major, minor, patch, 0, parts)


def registry_hostname(hostname: str) -> str:
    """The name terraform and OpenTofu accept as a module registry host for a server reached as `hostname`: they
    read a module source's first part as a host only when it has a dot, so `localhost:8443` is written as
    `127.0.0.1:8443` (the same server: the local certificate is valid for both)."""
    host, _, port = hostname.rpartition(":") if ":" in hostname else (hostname, "", "")
    if host.lower() == "localhost":
        return f"127.0.0.1:{port}" if port else "127.0.0.1"
    return hostname


DEPRECATION_REASON_MAX = 1000


def check_deprecation(raw: Any) -> dict[str, str] | None:
    """A version's `deprecation` change (HCP Terraform's manage module versions API): `deprecated-status`
    `Deprecated` with an optional `reason` and `link` (an http(s) URL), or `Undeprecated` (None)."""
    pointer = "/data/attributes/deprecation"
    if not isinstance(raw, dict):
        raise Invalid("deprecation is required", pointer=pointer)
    status = raw.get("deprecated-status")
    if status == "Undeprecated":
        return None
    if status != "Deprecated":
        raise Invalid("deprecated-status must be Deprecated or Undeprecated", pointer=f"{pointer}/deprecated-status")
    reason, link = raw.get("reason") or "", raw.get("link") or ""
    if not isinstance(reason, str) or len(reason) > DEPRECATION_REASON_MAX:
        raise Invalid(
            f"reason must be text of at most {DEPRECATION_REASON_MAX} characters", pointer=f"{pointer}/reason"
        )
    if not isinstance(link, str) or len(link) > 2048 or (link and not re.match(r"^https?://[^\s]+\Z", link)):
        raise Invalid("link must be an http or https URL", pointer=f"{pointer}/link")
    return {"reason": reason, "link": link}


def check_revocation(raw: Any) -> dict[str, str] | None:
    """A version's `revocation` change (HCP Terraform's manage module versions API): `status` `Revoked` with an
    optional `message` and `link`, or `Unrevoked` (None: the version stays deprecated)."""
    pointer = "/data/attributes/revocation"
    if not isinstance(raw, dict):
        raise Invalid("revocation must be an object: status, message, link", pointer=pointer)
    status = raw.get("status")
    if isinstance(status, str) and status.lower() == "unrevoked":
        return None
    if not isinstance(status, str) or status.lower() != "revoked":
        raise Invalid("status must be Revoked or Unrevoked", pointer=f"{pointer}/status")
    message, link = raw.get("message") or "", raw.get("link") or ""
    if not isinstance(message, str) or len(message) > DEPRECATION_REASON_MAX:
        raise Invalid(
            f"message must be text of at most {DEPRECATION_REASON_MAX} characters", pointer=f"{pointer}/message"
        )
    if not isinstance(link, str) or len(link) > 2048 or (link and not re.match(r"^https?://[^\s]+\Z", link)):
        raise Invalid("link must be an http or https URL", pointer=f"{pointer}/link")
    return {"message": message, "link": link}


def revocation_document(version: ModuleVersion) -> dict[str, str]:
    """The `revocation` attribute of a version as HCP Terraform shows it."""
    if version.revocation is None:
        return {"status": "unrevoked"}
    return {"status": "revoked", "message": version.revocation["message"], "link": version.revocation["link"]}


def installable_by(version: ModuleVersion, configuration_uploaded_at: str | None) -> bool:
    """Whether a configuration may install the version: any, unless it is revoked; then only a configuration
    uploaded before its revocation (an existing user: `configuration_uploaded_at`, a run's configuration version's
    creation; None for a caller with no configuration, such as a person's own `terraform init`: a new user)."""
    if version.revocation is None:
        return True
    return configuration_uploaded_at is not None and configuration_uploaded_at <= version.revocation["revoked-at"]
