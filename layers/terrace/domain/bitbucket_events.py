"""Bitbucket's webhook deliveries read as the same `Push` and `PullRequest` a GitHub-shaped forge's become
(`vcs_events.py`), from Atlassian's documented payloads. Pure: the delivery was verified (its `X-Hub-Signature`) by
`services/vcs/webhooks.py`; the commit and changed files are read from the API.

- Bitbucket Cloud (`X-Event-Key`): `repo:push` (`push.changes[]`: `new`/`old` of type `branch` or `tag`, their
  `target.hash`, `links.html.href` the comparison), `pullrequest:created` and `pullrequest:updated` (`pullrequest`:
  `id`, `title`, `links.html.href`, `source`/`destination` `branch.name`, `commit.hash` (12 characters: the full
  SHA is read from the API), `repository.full_name`); `actor.nickname` the sender.
- Bitbucket Data Center (`X-Event-Key`): `repo:refs_changed` (`changes[]`: `ref.id`, `fromHash`, `toHash`, `type`),
  `pr:opened` and `pr:from_ref_updated` (`pullRequest`: `id`, `title`, `fromRef`/`toRef` with `id`,
  `latestCommit`, `repository.slug` and `project.key`; `links.self[0].href`); `actor.name` the sender.
A pull request whose source repository is not its destination's is a fork's."""

from __future__ import annotations

import re
from typing import Any

from terrace.domain.vcs_events import SHA_RE, ZERO_SHA, PullRequest, Push, _get, _text

SHORT_SHA_RE = re.compile(r"^[0-9a-f]{7,40}\Z")
CHANGES_MAX = 20  # refs of one push read (a `git push --all` of more starts runs for the first ones only)
CLOUD_PR = {"pullrequest:created": "opened", "pullrequest:updated": "synchronize"}
SERVER_PR = {"pr:opened": "opened", "pr:from_ref_updated": "synchronize"}


def _pr(number: Any, head: str, action: str, **fields: str) -> PullRequest | None:
    if (
        not isinstance(number, int)
        or isinstance(number, bool)
        or not 0 < number < 2**31
        or not SHORT_SHA_RE.match(head)
    ):
        return None
    return PullRequest(action=action, number=number, head_sha=head, **fields)


def _link(value: Any) -> str:
    text = _text(value, 2048)
    return text if text.startswith(("https://", "http://")) else ""


# Bitbucket Cloud ---------------------------------------------------------------------------
def cloud_pushes(payload: Any) -> list[Push]:
    """The branches and tags a `repo:push` moved to a commit (deletions are none)."""
    changes = _get(payload, "push", "changes")
    repository, sender = _text(_get(payload, "repository", "full_name")), _cloud_sender(payload)
    pushes = []
    for change in changes[:CHANGES_MAX] if isinstance(changes, list) else []:
        new, old = _get(change, "new"), _get(change, "old")
        kind, name, after = _text(_get(new, "type")), _text(_get(new, "name")), _text(_get(new, "target", "hash"))
        if kind not in ("branch", "tag") or not name or not SHA_RE.match(after):
            continue
        before = _text(_get(old, "target", "hash"))
        ref = f"refs/{'heads' if kind == 'branch' else 'tags'}/{name}"
        compare = _link(_get(change, "links", "html", "href"))
        pushes.append(Push(ref, before if SHA_RE.match(before) else ZERO_SHA, after, repository, sender, compare))
    return pushes


def cloud_pull_request(event: str, payload: Any) -> PullRequest | None:
    pr = _get(payload, "pullrequest")
    if event not in CLOUD_PR or _text(_get(pr, "state")) not in ("OPEN", ""):
        return None
    return _pr(
        _get(pr, "id"), _text(_get(pr, "source", "commit", "hash")), CLOUD_PR[event],
        head_ref=_text(_get(pr, "source", "branch", "name")),
        head_repository=_text(_get(pr, "source", "repository", "full_name")) or "(fork)",
        base_ref=_text(_get(pr, "destination", "branch", "name")),
        repository=_text(_get(payload, "repository", "full_name")), url=_link(_get(pr, "links", "html", "href")),
        title=_text(_get(pr, "title"), 1024), sender=_cloud_sender(payload),
    )  # fmt: skip


def _cloud_sender(payload: Any) -> str:
    return _text(_get(payload, "actor", "nickname")) or _text(_get(payload, "actor", "display_name"))


# Bitbucket Data Center ---------------------------------------------------------------------
def _server_repo(repository: Any) -> str:
    key, slug = _text(_get(repository, "project", "key")), _text(_get(repository, "slug"))
    return f"{key}/{slug}" if key and slug else ""


def server_pushes(payload: Any) -> list[Push]:
    """The branches and tags a `repo:refs_changed` moved to a commit (deletions are none)."""
    changes = _get(payload, "changes")
    repository, sender = _server_repo(_get(payload, "repository")), _text(_get(payload, "actor", "name"))
    pushes = []
    for change in changes[:CHANGES_MAX] if isinstance(changes, list) else []:
        ref = _text(_get(change, "ref", "id")) or _text(_get(change, "refId"))
        after, before = _text(_get(change, "toHash")), _text(_get(change, "fromHash"))
        if _get(change, "type") == "DELETE" or not SHA_RE.match(after) or after == ZERO_SHA:
            continue
        if not ref.startswith(("refs/heads/", "refs/tags/")):
            continue
        pushes.append(Push(ref, before if SHA_RE.match(before) else ZERO_SHA, after, repository, sender, ""))
    return pushes


def _branch(ref: Any) -> str:
    return _text(_get(ref, "displayId")) or _text(_get(ref, "id")).removeprefix("refs/heads/")


def server_pull_request(event: str, payload: Any) -> PullRequest | None:
    pr = _get(payload, "pullRequest")
    if event not in SERVER_PR or _text(_get(pr, "state")) not in ("OPEN", ""):
        return None
    links = _get(pr, "links", "self")
    url = _link(_get(links[0], "href")) if isinstance(links, list) and links else ""
    return _pr(
        _get(pr, "id"), _text(_get(pr, "fromRef", "latestCommit")), SERVER_PR[event],
        head_ref=_branch(_get(pr, "fromRef")), base_ref=_branch(_get(pr, "toRef")),
        head_repository=_server_repo(_get(pr, "fromRef", "repository")) or "(fork)",
        repository=_server_repo(_get(pr, "toRef", "repository")), url=url, title=_text(_get(pr, "title"), 1024),
        sender=_text(_get(payload, "actor", "name")),
    )  # fmt: skip
