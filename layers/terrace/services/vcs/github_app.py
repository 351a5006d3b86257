"""GitHub App installations (HCP's `github-app-installations`: `GET /github-app/installations`,
`GET /github-app/installation/:id`, a workspace's `vcs-repo.github-app-installation-id`), when the deployment has a
GitHub App (`adapters/github_app.py`). An installation's id is `ghain-<GitHub's installation id>`.

An installation reaches every repository of the GitHub account that installed the App, so which organization may
use which installation is the deployment's decision, not the caller's: `TERRACE_GITHUB_APP_INSTALLATIONS` names,
for each organization, the GitHub accounts whose installations it may use (`acme=octo-org,octocat;ops=ops-team`;
`*=*` for a deployment of one tenant). An installation no organization of the caller may use is not found, in the
list and by id alike; connecting a workspace asks again, for the workspace's organization. The forge calls of a
workspace connected through an installation use an installation token asked for its one repository."""

from __future__ import annotations

import builtins
import re

from terrace.adapters.forge import ForgeAccess, ForgeError
from terrace.adapters.github_app import GitHubApp, Installation
from terrace.domain.errors import Forbidden, NotFound
from terrace.domain.principal import Principal
from terrace.services.access.authz import Action
from terrace.services.access.organizations import OrganizationService

PREFIX = "ghain-"
_ID = re.compile(r"^ghain-([1-9][0-9]{0,18})\Z")


def installation_number(ghain_id: object) -> int | None:
    """GitHub's installation id in a `ghain-…` id (None: not one)."""
    m = _ID.match(ghain_id) if isinstance(ghain_id, str) else None
    return int(m.group(1)) if m else None


def parse_grants(text: str) -> dict[str, frozenset[str]]:
    """`acme=octo-org,octocat;ops=ops-team` -> {organization: GitHub logins (lower case)}."""
    grants: dict[str, frozenset[str]] = {}
    for part in text.split(";"):
        org, _, logins = part.partition("=")
        if org.strip() and logins.strip():
            names = frozenset(n.strip().lower() for n in logins.split(",") if n.strip())
            grants[org.strip()] = grants.get(org.strip(), frozenset()) | names
    return grants


class GitHubAppInstallations:
    def __init__(self, app: GitHubApp | None, grants: str, organizations: OrganizationService) -> None:
        self._app, self._grants, self._orgs = app, parse_grants(grants), organizations

    @property
    def configured(self) -> bool:
        return self._app is not None

    def may_use(self, org_name: str, installation: Installation) -> bool:
        account = installation.account.lower()
        return any(account in logins or "*" in logins for org in (org_name, "*") for logins in [
            self._grants.get(org, frozenset())])  # fmt: skip

    def list(self, principal: Principal) -> builtins.list[Installation]:
        """The installations some organization of the caller may use (one whose VCS providers it may read)."""
        if self._app is None:
            return []
        names = [org.name for org in self._orgs.list(principal) if self._reads_vcs(principal, org.key)]
        return [i for i in self._app.installations() if any(self.may_use(name, i) for name in names)]

    def get(self, principal: Principal, ghain_id: str) -> Installation:
        number = installation_number(ghain_id)
        found = next((i for i in self.list(principal) if i.id == number), None) if number else None
        if found is None:
            raise NotFound(f"github app installation {ghain_id[:64]} not found")
        return found

    def _reads_vcs(self, principal: Principal, org_key: str) -> bool:
        try:
            self._orgs.get_by_key(principal, org_key, Action.READ_VCS)
        except (NotFound, Forbidden):
            return False
        return True

    # for this area -----------------------------------------------------------------------------
    def usable(self, org_key: str, ghain_id: str) -> Installation:
        """The installation when the organization may use it; NotFound otherwise (or without an App)."""
        number = installation_number(ghain_id)
        if self._app is None or number is None:
            raise NotFound(f"github app installation {str(ghain_id)[:64]} not found")
        try:
            installation = self._app.installation(number)
        except ForgeError as exc:
            if exc.status == 404:
                raise NotFound(f"github app installation {ghain_id} not found") from exc
            raise
        if not self.may_use(self._orgs.by_key(org_key).name, installation):
            raise NotFound(f"github app installation {ghain_id} not found")
        return installation

    def access(self, org_key: str, ghain_id: str, repository: str) -> ForgeAccess:
        """The forge access of `repository` through the installation (a token for that repository only)."""
        installation = self.usable(org_key, ghain_id)
        assert self._app is not None
        return ForgeAccess(self._app.api_url, self._app.token(installation.id, repository), "github")

    def repositories(self, org_key: str, ghain_id: str) -> builtins.list[str]:
        installation = self.usable(org_key, ghain_id)
        assert self._app is not None
        return self._app.repositories(installation.id)

    def page_of(self, installation: Installation) -> str:
        return installation.html_url or (f"{self._app.http_url}/settings/installations/{installation.id}"
                                         if self._app else "")  # fmt: skip
