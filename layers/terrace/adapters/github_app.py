"""The GitHub App port: the deployment's one GitHub App (`TERRACE_GITHUB_APP_*`), as GitHub's REST API knows it,
relative to the App's `api-url` (`https://api.github.com`, `<host>/api/v3` for GitHub Enterprise Server):

- `GET /app/installations`, `GET /app/installations/{installation_id}`: the App's installations (each a GitHub
  account that installed it), authenticated as the App by a JSON Web Token signed RS256 with its private key
  (issued 60 s in the past, expiring within 10 minutes, `iss` the App's id, as GitHub requires)
- `POST /app/installations/{installation_id}/access_tokens`: an installation access token, asked for the one
  repository a workspace uses (`repositories: [name]`); the forge calls of that workspace (`forge.py`) are then
  made with it. Tokens are kept until five minutes before GitHub's `expires_at`.
- `GET /installation/repositories`: the repositories an installation may reach (with an installation token)

Implementations: `httpx_github_app.py` (under the outbound destination rules, through `httpx_forge.py`) and, in
unit tests, the same over the forge twin."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class Installation:
    id: int  # GitHub's installation id
    account: str  # the login of the user or organization that installed the App
    account_type: str  # User or Organization
    html_url: str  # the installation's settings page on GitHub
    avatar_url: str


class GitHubApp(Protocol):
    api_url: str
    http_url: str
    slug: str

    def installations(self) -> list[Installation]: ...

    def installation(self, installation_id: int) -> Installation:
        """ForgeError 404 when the App has no such installation."""
        ...

    def token(self, installation_id: int, repository: str | None) -> str:
        """An installation access token (for `repository`, `owner/name`, only; None: every repository)."""
        ...

    def repositories(self, installation_id: int) -> list[str]:
        """`owner/name` of the repositories the installation reaches (the first pages)."""
        ...
