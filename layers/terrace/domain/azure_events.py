"""Azure DevOps Services' service hook events read as the same `Push` and `PullRequest` a GitHub-shaped forge's
become (`vcs_events.py`), from Microsoft's documented payloads ("Service hooks events": `git.push`,
`git.pullrequest.created`, `git.pullrequest.updated`). Pure: the delivery was verified (its basic authentication)
by `services/vcs/webhooks.py`; the commit and changed files are read from the API.

- `git.push`: `resource.refUpdates[]` (`name`, `oldObjectId`, `newObjectId`), `resource.repository` (`name`,
  `project.name`, `remoteUrl`), `resource.pushedBy.uniqueName`.
- `git.pullrequest.*`: `resource.pullRequestId`, `title`, `status` (`active`), `sourceRefName`, `targetRefName`,
  `lastMergeSourceCommit.commitId`, `repository`, `forkSource` (present: the source is a fork), `createdBy`.
A repository is named `<project>/_git/<name>` here: the organization is the connection's (the hook is its own)."""

from __future__ import annotations

from typing import Any

from terrace.domain.vcs_events import SHA_RE, ZERO_SHA, PullRequest, Push, _get, _text

CHANGES_MAX = 20
PR_EVENTS = {"git.pullrequest.created": "opened", "git.pullrequest.updated": "synchronize"}


def _repository(repository: Any) -> str:
    project, name = _text(_get(repository, "project", "name")), _text(_get(repository, "name"))
    return f"{project}/_git/{name}" if project and name else ""


def _remote(repository: Any) -> str:
    url = _text(_get(repository, "remoteUrl"), 2048)
    return url if url.startswith("https://") else ""


def pushes(payload: Any) -> list[Push]:
    """The branches and tags a `git.push` moved to a commit (deletions are none)."""
    resource = _get(payload, "resource")
    updates = _get(resource, "refUpdates")
    repository = _repository(_get(resource, "repository"))
    sender = _text(_get(resource, "pushedBy", "uniqueName")) or _text(_get(resource, "pushedBy", "displayName"))
    remote = _remote(_get(resource, "repository"))
    found = []
    for update in updates[:CHANGES_MAX] if isinstance(updates, list) else []:
        ref, after = _text(_get(update, "name")), _text(_get(update, "newObjectId"))
        before = _text(_get(update, "oldObjectId"))
        if not SHA_RE.match(after) or after == ZERO_SHA or not ref.startswith(("refs/heads/", "refs/tags/")):
            continue
        before = before if SHA_RE.match(before) else ZERO_SHA
        compare = f"{remote}/branchCompare?baseVersion=GC{before}&targetVersion=GC{after}" if remote else ""
        found.append(Push(ref, before, after, repository, sender, compare if before != ZERO_SHA else ""))
    return found


def pull_request(event: str, payload: Any) -> PullRequest | None:
    resource = _get(payload, "resource")
    number, head = _get(resource, "pullRequestId"), _text(_get(resource, "lastMergeSourceCommit", "commitId"))
    if event not in PR_EVENTS or _text(_get(resource, "status")) != "active":
        return None
    if not isinstance(number, int) or isinstance(number, bool) or not 0 < number < 2**31 or not SHA_RE.match(head):
        return None
    repository = _repository(_get(resource, "repository"))
    fork = _get(resource, "forkSource")
    head_repository = repository if fork is None else (_repository(_get(fork, "repository")) or "(fork)")
    if fork is not None and head_repository.lower() == repository.lower():
        head_repository = "(fork)"
    remote = _remote(_get(resource, "repository"))
    return PullRequest(
        action=PR_EVENTS[event], number=number, head_sha=head,
        head_ref=_text(_get(resource, "sourceRefName")).removeprefix("refs/heads/"), head_repository=head_repository,
        base_ref=_text(_get(resource, "targetRefName")).removeprefix("refs/heads/"), repository=repository,
        url=f"{remote}/pullrequest/{number}" if remote else "", title=_text(_get(resource, "title"), 1024),
        sender=_text(_get(resource, "createdBy", "uniqueName")),
    )  # fmt: skip
