"""VCS providers of an organization: OAuth clients (HCP's `oauth-clients`) and their OAuth tokens.

An OAuth client names a forge (`service-provider`, its `http-url` and `api-url`); its credentials (an
`oauth-token-string`, an OAuth application's `secret`, a `private-key`) are secrets, stored only as ciphertext and
never returned. A client created with an `oauth-token-string` (a personal access token) gets its OAuth token at once,
as on HCP Terraform. Terrace drives GitHub-shaped forges: GitHub, GitHub Enterprise Server, and Gitea/Forgejo (a
`github_enterprise` client whose `api-url` is the forge's `/api/v1`), and GitLab (gitlab.com, Community and
Enterprise editions; `api-url` `<host>/api/v4`), Bitbucket Cloud (`bitbucket_hosted`, `api-url`
`https://api.bitbucket.org/2.0`, repositories `<workspace>/<repository>`), Bitbucket Data Center
(`bitbucket_data_center` and `bitbucket_server`, `api-url` the server's base URL, repositories
`<PROJECT>/<repository>`) and Azure DevOps Services (`ado_services`, `api-url` `https://dev.azure.com`,
repositories `<organization>/<project>/_git/<name>`)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from terrace.domain import limits, tenant_regex
from terrace.domain.errors import Invalid

# HCP's service providers and the names its UI shows for them
PROVIDERS: dict[str, str] = {
    "github": "GitHub",
    "github_enterprise": "GitHub Enterprise",
    "gitlab_hosted": "GitLab.com",
    "gitlab_community_edition": "GitLab Community Edition",
    "gitlab_enterprise_edition": "GitLab Enterprise Edition",
    "bitbucket_hosted": "Bitbucket Cloud",
    "bitbucket_server": "Bitbucket Server",
    "bitbucket_server_legacy": "Bitbucket Server",
    "bitbucket_data_center": "Bitbucket Data Center",
    "ado_server": "Azure DevOps Server",
    "ado_services": "Azure DevOps Services",
}
GITHUB_SHAPED = frozenset({"github", "github_enterprise"})  # GitHub's REST and webhook shapes
GITLAB = frozenset({"gitlab_hosted", "gitlab_community_edition", "gitlab_enterprise_edition"})
BITBUCKET_CLOUD = frozenset({"bitbucket_hosted"})  # Bitbucket Cloud's REST 2.0
BITBUCKET_SERVER = frozenset({"bitbucket_data_center", "bitbucket_server"})  # Bitbucket Data Center's REST 1.0
AZURE_DEVOPS = frozenset({"ado_services"})  # Azure DevOps Services' REST API and service hooks
DRIVEN = GITHUB_SHAPED | GITLAB | BITBUCKET_CLOUD | BITBUCKET_SERVER | AZURE_DEVOPS  # REST calls and webhooks
# the API each kind of forge speaks (`adapters/forge.py: ForgeAccess.kind`) and HCP's `source` of its commits
_KINDS = (
    (GITLAB, "gitlab", "gitlab"),
    (BITBUCKET_CLOUD, "bitbucket", "bitbucket"),
    (BITBUCKET_SERVER, "bitbucket_server", "bitbucket"),
    (AZURE_DEVOPS, "azure_devops", "ado"),
)
# a repository's identifier on each kind: how many parts, and a fixed part (Azure DevOps' `_git`)
IDENTIFIER_SHAPES = {"github": "<owner>/<repository>", "bitbucket": "<workspace>/<repository>",
                     "bitbucket_server": "<PROJECT>/<repository>",
                     "azure_devops": "<organization>/<project>/_git/<repository>"}  # fmt: skip


def forge_kind(service_provider: str) -> str:
    """The API an OAuth client's `service-provider` speaks (`adapters/forge.py: ForgeAccess.kind`)."""
    return next((kind for providers, kind, _ in _KINDS if service_provider in providers), "github")


def source_of(service_provider: str) -> str:
    """A configuration version's `source` for a commit of this provider (HCP's `github`, `gitlab`, `bitbucket`,
    `ado`)."""
    return next((source for providers, _, source in _KINDS if service_provider in providers), "github")


def identifier_fits(kind: str, identifier: str) -> bool:
    """Whether `identifier` names a repository on a forge of `kind` (GitLab's nested groups: any depth)."""
    parts = identifier.split("/")
    if kind == "azure_devops":
        return len(parts) == 4 and parts[2] == "_git"
    return kind == "gitlab" or len(parts) == 2


PRIVATE_KEY_PROVIDERS = frozenset({"ado_server"})  # HCP accepts `private-key` for Azure DevOps Server only
# a key these providers hold may not be set empty (HCP: "The Consumer Key for Bitbucket Data Center must be present")
KEY_REQUIRED = frozenset({"bitbucket_server", "bitbucket_data_center"})

URL_MAX = 2048
NAME_MAX = 255
KEY_MAX = 1024
SECRET_MAX_BYTES = 4096  # one KMS Encrypt call: a token, an application secret, an RSA private key


@dataclass(frozen=True)
class OAuthClient:
    id: str
    organization: str
    name: str | None
    service_provider: str
    http_url: str
    api_url: str
    key: str
    rsa_public_key: str
    organization_scoped: bool
    projects: tuple[str, ...]
    token_ids: tuple[str, ...]
    created_at: str

    @property
    def display_name(self) -> str:
        return PROVIDERS.get(self.service_provider, self.service_provider)


@dataclass(frozen=True)
class OAuthToken:
    id: str
    organization: str
    client_id: str
    service_provider_user: str
    has_ssh_key: bool
    created_at: str


def _pointer(name: str) -> str:
    return f"/data/attributes/{name}"


def check_provider(attrs: dict[str, Any]) -> str:
    value = attrs.get("service-provider")
    if not isinstance(value, str) or value not in PROVIDERS:
        choices = ", ".join(sorted(PROVIDERS))
        raise Invalid(f"service-provider is required: one of {choices}", pointer=_pointer("service-provider"))
    return str(value)


def check_url(attrs: dict[str, Any], name: str) -> str:
    value = attrs.get(name)
    if not isinstance(value, str) or not value.strip():
        raise Invalid(f"{name} is required: an http or https URL", pointer=_pointer(name))
    value = limits.text(value.strip(), name, URL_MAX)
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.username or parts.password:
        raise Invalid(f"{name} must be an http or https URL without credentials", pointer=_pointer(name))
    return value.rstrip("/")


def check_name(attrs: dict[str, Any]) -> str | None:
    value = attrs.get("name")
    return None if value is None or value == "" else limits.text(value, "name", NAME_MAX)


def check_text(attrs: dict[str, Any], name: str, max_chars: int = KEY_MAX) -> str:
    value = attrs.get(name)
    return "" if value is None else limits.text(value, name, max_chars)


def check_secret(attrs: dict[str, Any], name: str) -> str | None:
    """A secret attribute (None when absent or empty), bounded."""
    value = attrs.get(name)
    if value is None or value == "":
        return None
    if not isinstance(value, str) or len(value.encode()) > SECRET_MAX_BYTES or "\x00" in value:
        raise Invalid(f"{name} must be a string of at most {SECRET_MAX_BYTES} bytes", pointer=_pointer(name))
    return value


def check_bool(attrs: dict[str, Any], name: str, default: bool) -> bool:
    value = attrs.get(name, default)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise Invalid(f"{name} must be true or false", pointer=_pointer(name))
    return value


def check_credentials(provider: str, attrs: dict[str, Any]) -> None:
    """The credential attributes `attrs` sets are ones `provider` takes."""
    if attrs.get("private-key") not in (None, "") and provider not in PRIVATE_KEY_PROVIDERS:
        raise Invalid("private-key is only for ado_server clients", pointer=_pointer("private-key"))
    if provider in KEY_REQUIRED and "key" in attrs and not attrs["key"]:
        raise Invalid(
            f"The Consumer Key for {PROVIDERS[provider]} must be present. Please add a value for `key`.",
            pointer=_pointer("key"),
        )


# a workspace's repository (`vcs-repo`) -----------------------------------------------------------
# owner/name; GitLab's projects may sit in nested groups (group/subgroup/name)
IDENTIFIER_RE = re.compile(r"^[A-Za-z0-9_.-]{1,100}(/[A-Za-z0-9_.-]{1,100}){1,19}\Z")
BRANCH_MAX = 255
TAGS_REGEX_MAX = 255
VCS_REPO = "vcs-repo"  # in `Workspace.extra`: what the API shows (no secret)
GHAIN_RE = re.compile(r"^ghain-[1-9][0-9]{0,18}\Z")  # a GitHub App installation (`services/vcs/github_app.py`)


@dataclass(frozen=True)
class RepoRequest:
    identifier: str
    branch: str  # "" = the repository's default branch
    oauth_token_id: str
    ingress_submodules: bool
    tags_regex: str | None
    installation_id: str | None = None  # `ghain-…`: through the deployment's GitHub App (oauth_token_id is "")


def _dots(identifier: str) -> bool:
    return ".." in identifier or any(part == "." for part in identifier.split("/"))


def check_repo(raw: Any) -> RepoRequest:
    """`vcs-repo` as tfe_workspace and go-tfe send it; a 422 naming the field otherwise."""
    base = "/data/attributes/vcs-repo"
    if not isinstance(raw, dict):
        raise Invalid("vcs-repo must be an object or null", pointer=base)
    identifier = raw.get("identifier")
    if not isinstance(identifier, str) or not IDENTIFIER_RE.match(identifier) or _dots(identifier):
        raise Invalid("vcs-repo identifier must be <owner>/<repository> (GitLab: <group>/.../<project>)",
                      pointer=f"{base}/identifier")  # fmt: skip
    token, installation = raw.get("oauth-token-id") or "", raw.get("github-app-installation-id") or None
    if installation is not None and (not isinstance(installation, str) or not GHAIN_RE.match(installation)):
        raise Invalid("vcs-repo github-app-installation-id must be a ghain- id",
                      pointer=f"{base}/github-app-installation-id")  # fmt: skip
    if installation is not None and token:
        raise Invalid("vcs-repo takes oauth-token-id or github-app-installation-id, not both", pointer=base)
    if installation is None and (not isinstance(token, str) or not token):
        raise Invalid("vcs-repo oauth-token-id is required", pointer=f"{base}/oauth-token-id")
    branch = raw.get("branch") or ""
    if not isinstance(branch, str) or len(branch) > BRANCH_MAX or any(c in branch for c in " ~^:?*[\\\x00"):
        raise Invalid("vcs-repo branch must be a branch name", pointer=f"{base}/branch")
    submodules = raw.get("ingress-submodules", False)
    if not isinstance(submodules, bool):
        raise Invalid("vcs-repo ingress-submodules must be true or false", pointer=f"{base}/ingress-submodules")
    tags = raw.get("tags-regex") or None
    if tags is not None:
        if not isinstance(tags, str) or len(tags) > TAGS_REGEX_MAX:
            raise Invalid(f"vcs-repo tags-regex is at most {TAGS_REGEX_MAX} characters", pointer=f"{base}/tags-regex")
        try:
            tenant_regex.compile_bounded(tags)
        except tenant_regex.PatternRefused as exc:
            raise Invalid(
                f"vcs-repo tags-regex is not a regular expression: {exc}", pointer=f"{base}/tags-regex"
            ) from exc
    return RepoRequest(identifier, branch, str(token), submodules, tags, installation)
