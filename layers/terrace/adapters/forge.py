"""The forge port: the REST calls Terrace makes to a forge, relative to an OAuth client's `api-url`, with an OAuth
token's credential. The whole set, and no other (docs/features/vcs.md lists it; `tests/contract/test_forge_contract.py`
holds every implementation to it). A GitHub-shaped forge (`ForgeAccess.kind` `github`: GitHub, GitHub Enterprise
Server, Gitea and Forgejo):

- `POST /repos/{owner}/{repo}/hooks`, `DELETE /repos/{owner}/{repo}/hooks/{id}`: a workspace's webhook
- `GET /repos/{owner}/{repo}`: the repository (its default branch, its page)
- `GET /repos/{owner}/{repo}/commits/{ref}`: a commit (the SHA a branch or tag names, its message and author)
- `GET /repos/{owner}/{repo}/tarball/{ref}`: the commit's files (github.com redirects to another host: each hop
  passes the destination checks of any outbound request, and the credential is not sent to another host)
- `GET /repos/{owner}/{repo}/compare/{base}...{head}`, `GET /repos/{owner}/{repo}/pulls/{number}/files`: the files a
  push or a pull request changed (trigger patterns)
- `POST /repos/{owner}/{repo}/statuses/{sha}`: the commit status of a run
- `POST /repos/{owner}/{repo}/issues/{number}/comments`, `PATCH /repos/{owner}/{repo}/issues/comments/{id}`: the
  one comment of a workspace on a pull request (its speculative plan's summary), created once, then updated in place

A GitLab (`kind` `gitlab`: gitlab.com, Community and Enterprise editions; `:id` is the URL-encoded project path):

- `GET /projects/:id`, `POST /projects/:id/hooks`, `DELETE /projects/:id/hooks/:hook_id` (a per-hook `token`)
- `GET /projects/:id/repository/commits/:sha`, `GET /projects/:id/repository/archive.tar.gz?sha=`
- `GET /projects/:id/repository/compare?from=&to=`, `GET /projects/:id/merge_requests/:iid/diffs`
- `POST /projects/:id/statuses/:sha` (states pending, running, success, failed, canceled)
- `POST /projects/:id/merge_requests/:iid/notes`, `PUT /projects/:id/merge_requests/:iid/notes/:note_id`: the
  workspace's one note on a merge request

Bitbucket Cloud (`kind` `bitbucket`, REST 2.0, `api-url` `https://api.bitbucket.org/2.0`; `{ws}/{repo}`):

- `GET /repositories/{ws}/{repo}`, `POST /repositories/{ws}/{repo}/hooks`, `DELETE .../hooks/{uid}` (a `secret`)
- `GET .../commit/{ref}`, `GET .../pullrequests/{id}`, `GET .../diffstat/{head}..{base}`
- `GET <web host>/{ws}/{repo}/get/{sha}.tar.gz` (the web host is the api-url's without `api.` and `/2.0`; its
  redirects are followed under the destination checks, without the credential)
- `POST .../commit/{sha}/statuses/build` (states INPROGRESS, SUCCESSFUL, FAILED, STOPPED)
- `POST .../pullrequests/{id}/comments`, `PUT .../pullrequests/{id}/comments/{comment_id}` (`content.raw`): the
  workspace's one comment on a pull request

Bitbucket Data Center (`kind` `bitbucket_server`, `api-url` the server's base URL; `{PROJECT}/{repo}`), below
`/rest/api/1.0/projects/{p}/repos/{r}`: ``, `/default-branch`, `POST /webhooks`, `DELETE /webhooks/{id}`,
`/commits/{ref}`, `/compare/changes?from=&to=`, `/pull-requests/{id}/changes`; the archive
`/rest/api/latest/projects/{p}/repos/{r}/archive?at=&format=tgz&prefix=`; the build status
`POST /rest/build-status/1.0/commits/{sha}` (INPROGRESS, SUCCESSFUL, FAILED); a pull request's comment
`POST /pull-requests/{id}/comments`, then `GET` and `PUT /pull-requests/{id}/comments/{comment_id}` (its `version`).

Azure DevOps Services (`kind` `azure_devops`, `api-url` `https://dev.azure.com`; `{org}/{project}/_git/{repo}`),
`api-version=7.1`, below `/{org}/{project}/_apis/git/repositories/{repo}`: ``, `/refs?filter=`, `/commits/{sha}`,
`/diffs/commits`, `/pullrequests/{id}`, `/items?scopePath=/&$format=zip` (the zip read by `domain/bounded_zip.py`),
`POST /commits/{sha}/statuses` (pending, succeeded, failed, error) and, for a pull request's plan,
`POST /pullRequests/{id}/statuses`; a pull request's comment, a thread of one (`POST /pullRequests/{id}/threads`,
then `PATCH /pullRequests/{id}/threads/{thread}/comments/{comment}`; its id `<thread>:<comment>`); service hooks
`POST|DELETE /{org}/_apis/hooks/subscriptions[/{id}]` (`git.push`, `git.pullrequest.created|updated`).

Implementations: `github_forge.py`, `gitlab_forge.py`, `bitbucket_forge.py`, `bitbucket_server_forge.py` and
`azure_devops_forge.py` (httpx through `httpx_forge.py`, under
`domain/destinations.py`'s rules), `ForgeByKind` below (the one the composition root hands the services: each call
to the implementation of its access's kind) and `memory_forge.py` (unit tests).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


class ForgeError(Exception):
    """The forge refused or did not answer; `status` is its HTTP status (None: no answer, or refused here)."""

    def __init__(self, detail: str, status: int | None = None) -> None:
        super().__init__(detail)
        self.detail, self.status = detail, status


@dataclass(frozen=True)
class ForgeAccess:
    api_url: str  # https://api.github.com, https://ghe.example.com/api/v3, https://gitea.example.com/api/v1
    token: str  # the OAuth token's credential (a personal access token)
    kind: str = "github"  # github (GitHub's REST shapes), gitlab, bitbucket, bitbucket_server, azure_devops: which
    # API the calls speak (`domain/vcs.py: forge_kind`)


@dataclass(frozen=True)
class Repository:
    identifier: str  # owner/name
    default_branch: str
    html_url: str
    clone_url: str = ""  # git's smart HTTP URL (`clone_url`, GitLab's `http_url_to_repo`): submodules' clones


@dataclass(frozen=True)
class Commit:
    sha: str
    message: str
    html_url: str
    author: str  # the forge login of the commit's author ("" when the forge knows none)


@dataclass(frozen=True)
class CommitStatus:
    state: str  # pending, running, success, failure, error (GitHub shows running as pending)
    context: str  # Terrace/<organization>/<workspace>
    description: str
    target_url: str  # the run's page
    pull_request: int | None = None  # the pull request whose head the commit is (Azure DevOps shows its own status)


STATES = ("pending", "running", "success", "failure", "error")
# what each kind of forge names them: GitHub has no running state; GitLab's are pending/running/success/failed/canceled
FORGE_STATES = {
    "github": {"running": "pending"},
    "gitlab": {"failure": "failed", "error": "canceled"},
    "bitbucket": {"pending": "INPROGRESS", "running": "INPROGRESS", "success": "SUCCESSFUL", "failure": "FAILED",
                  "error": "STOPPED"},
    "bitbucket_server": {"pending": "INPROGRESS", "running": "INPROGRESS", "success": "SUCCESSFUL",
                         "failure": "FAILED", "error": "FAILED"},
    "azure_devops": {"running": "pending", "success": "succeeded", "failure": "failed"},
}  # fmt: skip


def forge_state(kind: str, state: str) -> str:
    """The state a forge of `kind` is sent for the port's `state`."""
    return FORGE_STATES.get(kind, {}).get(state, state)


FILES_MAX = 3000  # changed files read for trigger patterns (GitHub lists at most 3000 for a pull request)


class Forge(Protocol):
    def repository(self, access: ForgeAccess, repo: str) -> Repository: ...

    def create_hook(self, access: ForgeAccess, repo: str, url: str, secret: str) -> str:
        """A webhook for pushes and pull (merge) requests to `url` with `secret` (GitHub signs with it, GitLab sends it
        as `X-Gitlab-Token`); its id."""
        ...

    def delete_hook(self, access: ForgeAccess, repo: str, hook_id: str) -> None:
        """Gone already is fine."""
        ...

    def commit(self, access: ForgeAccess, repo: str, ref: str) -> Commit: ...

    def tarball(self, access: ForgeAccess, repo: str, ref: str, max_bytes: int) -> bytes:
        """The gzipped tarball of `ref` (one top-level folder); ForgeError past `max_bytes`."""
        ...

    def changed_files(self, access: ForgeAccess, repo: str, base: str, head: str) -> list[str] | None:
        """The paths changed from `base` to `head` (None: the forge cannot say, e.g. more than it lists)."""
        ...

    def pull_files(self, access: ForgeAccess, repo: str, number: int) -> list[str] | None: ...

    def set_status(self, access: ForgeAccess, repo: str, sha: str, status: CommitStatus) -> None: ...

    def comment(self, access: ForgeAccess, repo: str, number: int, body: str, comment_id: str | None) -> str:
        """A comment on pull (merge) request `number`: a new one when `comment_id` is None, else that one edited
        (gone: ForgeError 404); its id."""
        ...


class ForgeByKind:
    """The forge of each access's kind (`github`, `gitlab`, `bitbucket`, ...); a kind without one is a ForgeError."""

    def __init__(self, forges: dict[str, Forge]) -> None:
        self._forges = forges

    def _of(self, access: ForgeAccess) -> Forge:
        found = self._forges.get(access.kind)
        if found is None:
            raise ForgeError(f"no forge speaks {access.kind!r}")
        return found

    def repository(self, access: ForgeAccess, repo: str) -> Repository:
        return self._of(access).repository(access, repo)

    def create_hook(self, access: ForgeAccess, repo: str, url: str, secret: str) -> str:
        return self._of(access).create_hook(access, repo, url, secret)

    def delete_hook(self, access: ForgeAccess, repo: str, hook_id: str) -> None:
        self._of(access).delete_hook(access, repo, hook_id)

    def commit(self, access: ForgeAccess, repo: str, ref: str) -> Commit:
        return self._of(access).commit(access, repo, ref)

    def tarball(self, access: ForgeAccess, repo: str, ref: str, max_bytes: int) -> bytes:
        return self._of(access).tarball(access, repo, ref, max_bytes)

    def changed_files(self, access: ForgeAccess, repo: str, base: str, head: str) -> list[str] | None:
        return self._of(access).changed_files(access, repo, base, head)

    def pull_files(self, access: ForgeAccess, repo: str, number: int) -> list[str] | None:
        return self._of(access).pull_files(access, repo, number)

    def set_status(self, access: ForgeAccess, repo: str, sha: str, status: CommitStatus) -> None:
        self._of(access).set_status(access, repo, sha, status)

    def comment(self, access: ForgeAccess, repo: str, number: int, body: str, comment_id: str | None) -> str:
        return self._of(access).comment(access, repo, number, body, comment_id)
